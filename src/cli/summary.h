// What each pass did, as the verbs report it on stderr: text for people, JSON for scripts.
#pragma once

#include <iostream>
#include <ostream>

#include "llvm/Support/JSON.h"
#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "passes/tag_kernel.h"

namespace pdfix::cli {

llvm::json::Object to_json(const passes::InjectReport& r);
void print_text(const passes::InjectReport& r, bool verbose, std::ostream& out);

llvm::json::Object to_json(const passes::ModuleSizeReport& r);
void print_text(const passes::ModuleSizeReport& r, bool verbose, std::ostream& out);

llvm::json::Object to_json(const passes::TagKernelReport& r);
void print_text(const passes::TagKernelReport& r, bool verbose, std::ostream& out);

// Pretty-printed, with a final newline.
void print_json(llvm::json::Value root, std::ostream& out);

// A pass's report on stderr, as JSON or as text.
template <typename Report>
void print_report(const Report& r, bool json, bool verbose) {
  if (json) {
    print_json(to_json(r), std::cerr);
  } else {
    print_text(r, verbose, std::cerr);
  }
}

}  // namespace pdfix::cli
