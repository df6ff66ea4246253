// The binaries a recording's processes mapped, as unwinding needs them: each executable map's
// file and build-id (the record's, or one the resolver proves), and its CFI, read from a copy
// proven to be that binary (found here, or fetched from debuginfod) the first time a pc falls in
// it, with its debug file's .debug_frame for code the binary's own .eh_frame leaves out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "llvm/Support/MemoryBuffer.h"
#include "passes/repair.h"
#include "passes/unwind_report.h"
#include "resolve/resolver.h"
#include "transform/process_timeline.h"
#include "transform/record.h"
#include "transform/session.h"
#include "unwind/arch.h"
#include "unwind/cfi_table.h"
#include "unwind/unwinder.h"

namespace pdfix::passes {

class UnwindBinaries {
 public:
  // Unproven binaries, and what debuginfod did, go into `report`.
  UnwindBinaries(const UnwindConfig& config, const Common& common, UnwindReport& report);

  // The handle of the binary map `m` names, registered on first sight.
  uint32_t binary_of(const transform::Map& m, const transform::Session& s);
  // The code at `pc`, which lies in `map` of `binary`: the binary's name and the CFI row that
  // covers the pc (from the binary's .eh_frame, else its debug file's .debug_frame; nullptr when
  // none is to be had).
  unwind::Code code_at(uint32_t binary, const transform::ProcessTimeline::Map& map, uint64_t pc,
                       const unwind::RegisterSet& regs);

 private:
  struct Binary {
    std::string name;
    uint32_t pid = 0;  // the first process that mapped it: where /proc/PID/root is looked at
    std::optional<format::BuildId> id;
    std::string why_none;  // why there is no id
    bool loaded = false;
    std::unique_ptr<unwind::CfiTable> cfi;
    // Its separate debug file's, for code the binary's own .eh_frame does not cover.
    std::unique_ptr<unwind::CfiTable> debug_cfi;
  };

  unwind::CfiTable* cfi_of(Binary& b, const unwind::RegisterSet& regs);
  // The binary from the debuginfod servers into the build-id cache, verified by its id; the
  // cached copy's path, or empty.
  std::string fetch(const Binary& b);
  // A copy already proven to be the binary (resolve::find_copy, find_debug_file, fetch), mapped;
  // nullptr when it cannot be read.
  static std::unique_ptr<llvm::MemoryBuffer> read_copy(const std::string& path);

  const UnwindConfig& config_;
  const Common& common_;
  UnwindReport& report_;
  std::shared_ptr<resolve::Resolver> resolver_;
  unwind::CfiCache cache_;  // before binaries_: their tables go first
  std::vector<Binary> binaries_;
  absl::flat_hash_map<std::string, uint32_t> index_;
};

}  // namespace pdfix::passes
