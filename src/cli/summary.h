// What each pass did, as the verbs report it on stderr: text for people, JSON for scripts.
#pragma once

#include <ostream>

#include "llvm/Support/JSON.h"
#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "passes/tag_kernel.h"

namespace pdfix::cli {

llvm::json::Object to_json(const passes::InjectReport& r);
void print_text(const passes::InjectReport& r, bool verbose, std::ostream& out);

llvm::json::Object to_json(const passes::ModuleSizeReport& r);
void print_text(const passes::ModuleSizeReport& r, std::ostream& out);

llvm::json::Object to_json(const passes::TagKernelReport& r);
void print_text(const passes::TagKernelReport& r, std::ostream& out);

// Pretty-printed, with a final newline.
void print_json(llvm::json::Value root, std::ostream& out);

}  // namespace pdfix::cli
