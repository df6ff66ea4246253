// A slim copy of an ELF file: what perf, hotspot and addr2line read of it to name, unwind and
// place samples (symbol tables, unwind tables, notes, debug information, the PLT's tables), and
// none of its code and data. Every offset, header and section stays where it was; the sections
// left out become SHT_NOBITS, their bytes holes of zeros. Readers compute addresses from file
// offsets (perf's `.text` offset for source lines, a non-PIE program's and a module's symbols),
// so a copy laid out anew, as `objcopy --only-keep-debug` lays it out, gives other answers
// (docs/design.md, "Slim copies"). A disassembler finds no code in it: missing, never wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/file_image.h"

namespace pdfix::store {

// What the section choice looks at.
struct SectionFacts {
  std::string_view name;
  uint32_t type = 0;
  uint64_t flags = 0;
  bool names_of_dynsym = false;  // the string table .dynsym links to
  // The file has a .plt.got: perf names its entries from the GOT slots' dynamic relocations.
  bool plt_got = false;
};

struct SlimOptions {
  // The unwind tables (.eh_frame and its index, .debug_frame, ARM's): read only to unwind user
  // stack copies, which a recording without DWARF-mode callchains does not have.
  bool unwind_tables = true;
};

// Whether a slim copy keeps the section's bytes. Left out besides code and data: what only a
// debugger reads (location lists, macros), and the unwind tables unless asked.
bool slim_keeps(const SectionFacts& s, const SlimOptions& options);

struct SlimElf {
  FileImage image;                       // views the original file and `section_headers`
  uint64_t kept = 0;                     // bytes of data in `image`
  uint64_t left_out = 0;                 // bytes that became holes
  std::vector<uint8_t> section_headers;  // the table, with the left-out sections made NOBITS
};

// The slim copy of `file`, whose bytes must outlive it. An error for what is not an ELF file
// of any class and byte order, or one whose headers or sections lie outside it.
absl::StatusOr<std::unique_ptr<SlimElf>> slim_elf(std::span<const uint8_t> file,
                                                  const SlimOptions& options);

}  // namespace pdfix::store
