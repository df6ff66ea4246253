// Kernel tagging: the build-id table names the kernel image "[kernel.kallsyms]" (guests:
// "[guest.kernel.kallsyms]" / "[guest.kernel.kallsyms.<pid>]"), first among the kernel's entries,
// as every reader matches it. The entry it was filed under (a vmlinux path, say) is kept. Which
// entry is the kernel is decided from the data: the module maps name the modules, and the kernel
// is the kernel-mode entry no module map names. In doubt, nothing changes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "passes/repair.h"
#include "transform/look_ahead.h"
#include "transform/owned_record.h"
#include "transform/rebuilt.h"

namespace pdfix::passes {

// What became of a machine's kernel entry in the build-id table.
enum class KernelOutcome { kTagged, kMovedFirst, kAlreadyTagged, kUndecided };
std::string_view name(KernelOutcome o);

struct TagKernelReport {
  struct Machine {
    std::string machine;  // "host" or "guest <pid>"
    KernelOutcome outcome = KernelOutcome::kUndecided;
    std::string detail;    // the entry taken for the kernel, or why none could be
    std::string build_id;  // the kernel's
  };
  std::vector<Machine> machines;
  bool table_repaired = false;  // perf 6.12.0 entry sizes rewritten
  uint64_t entries_added = 0;
  uint64_t kernel_maps_given_id = 0;
  uint64_t early_flushes = 0;  // runs of kernel-side records decided on before their end
};

class TagKernel : public Repair {
 public:
  explicit TagKernel(uint64_t look_ahead_bytes = transform::kLookAheadBytes)
      : held_(look_ahead_bytes) {}
  std::string_view name() const override { return "tag-kernel"; }
  bool wants(uint32_t type) const override;
  // The kernel map and the module maps after it are held back until the run of module maps
  // ends: only then is it known which table entry is the kernel, whose id the map can carry.
  // In a stream, kernel-mode HEADER_BUILD_ID records are held the same way.
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  bool holding() const override { return !held_.empty(); }
  absl::Status release(const transform::Session& s, transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;

  const TagKernelReport& report() const { return report_; }

 private:
  struct Choice {
    std::optional<size_t> entry;  // index into the session's build-id table; none: from the map
    format::BuildId id;
    uint16_t mode = 0;  // cpumode of the tag entry
    int32_t pid = -1;   // of the tag entry: -1 for the host, the guest's pid
    std::string tag_name;
    bool already_tagged = false;  // the entry carries the tag name
  };
  void observe(const transform::Map& m);
  // Which entry is each machine's kernel, from what has been seen so far.
  void decide(const transform::Session& s);
  absl::Status emit_kernel_map(const transform::RecordRef& r, const transform::Session& s,
                               transform::RecordSink& out);
  // Pipe mode: a HEADER_BUILD_ID record for each kernel decided on and not yet tagged, placed as
  // the record `at` was.
  absl::Status emit_tag_records(const transform::Session& s, transform::RecordSink& out,
                                const transform::RecordRef& at);
  std::vector<uint8_t> table(const transform::Session& s) const;

  // Module map names per machine: the full name and the kernel's module name.
  std::map<uint64_t, std::set<std::string>> modules_;
  std::map<uint64_t, format::BuildId> kernel_map_ids_;
  std::set<uint64_t> kernel_map_seen_;
  std::map<uint64_t, Choice> choices_;
  std::map<uint64_t, std::string> undecided_;
  std::set<uint64_t> tag_emitted_;  // pipe mode: machines whose tag record went out
  transform::LookAhead<transform::OwnedRecord> held_;
  TagKernelReport report_;
  transform::Rebuilt rebuilt_;
};

std::unique_ptr<RepairKind> tag_kernel_kind();

}  // namespace pdfix::passes
