// The DWARF LLVM's symbolizer names addresses from (functions, source lines, inline frames), read
// without what naming never looks at. LLVM's own reader inflates every compressed debug section of
// a file when it opens it: for libc's debug file that is 10 MB, location lists (a seventh of it,
// for variables only) included, each into zero-filled small pages, and most of export's naming
// time. Here only the sections a name or a line comes from are inflated, into one block of huge
// pages (io/huge_pages.h) written once.
#pragma once

#include <memory>

#include "llvm/DebugInfo/DIContext.h"
#include "llvm/Object/ObjectFile.h"

namespace pdfix::profile {

// The debug information of `obj` (which must outlive it) for symbolizing. A relocatable object
// (whose debug sections need relocating), or one whose sections do not inflate, is read by LLVM's
// own reader, which says what is wrong with it. A compressed section that claims more than it can
// hold is left out: its names are then the symbol table's.
std::unique_ptr<llvm::DIContext> naming_dwarf(const llvm::object::ObjectFile& obj);

}  // namespace pdfix::profile
