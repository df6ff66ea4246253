// Module-size repair: kernel-module maps whose extent is impossible (running to the top of the
// address space, past the architecture's module area, over the next module or the kernel image)
// get the length the best available evidence gives. Only the len field of those records changes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passes/repair.h"
#include "resolve/module_files.h"
#include "resolve/proc_modules.h"
#include "transform/look_ahead.h"
#include "transform/owned_record.h"

namespace pdfix::passes {

struct FixModuleSizesConfig {
  std::optional<resolve::ProcModules> proc_modules;  // the recording host's /proc/modules
  // Where module files are looked for: the run's resolver's places (sysroot, --search, caches).
  resolve::CopyPlaces places;
  std::string modules_dir;
};

struct ModuleSizeReport {
  struct Change {
    std::string filename;
    uint64_t start = 0;
    uint64_t old_len = 0;
    uint64_t new_len = 0;
    std::string problem;   // empty when exact evidence merely disagreed with a sane length
    std::string evidence;  // what the new length comes from
  };
  struct Unresolved {
    std::string filename;
    uint64_t start = 0;
    uint64_t len = 0;
    std::string problem;
  };
  uint64_t module_maps = 0;
  uint64_t early_flushes =
      0;  // runs of module maps judged before their end (transform/look_ahead.h)
  std::vector<Change> changed;
  std::vector<Unresolved> unresolved;  // judged wrong, but no evidence to repair it with
};

class FixModuleSizes : public Repair {
 public:
  explicit FixModuleSizes(FixModuleSizesConfig config,
                          uint64_t look_ahead_bytes = transform::kLookAheadBytes);

  std::string_view name() const override { return "fix-module-sizes"; }
  bool wants(uint32_t type) const override;
  // perf writes the module maps as one run, right after the kernel map: the pass holds such a run
  // back until it ends, then judges each map knowing its neighbours.
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  bool holding() const override { return !held_.empty(); }
  absl::Status release(const transform::Session& s, transform::RecordSink& out) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;

  const ModuleSizeReport& report() const { return report_; }

 private:
  struct Fix {
    uint64_t new_len = 0;
    std::string problem;
    std::string evidence;
  };
  // One entry per map, nullopt where the map stays as it is; fills the report's `unresolved`.
  std::vector<std::optional<Fix>> plan_fixes(const std::vector<const transform::Map*>& maps,
                                             const transform::Session& s);
  std::optional<Fix> from_module_file(const transform::Map& m, const transform::Session& s);

  FixModuleSizesConfig config_;
  std::optional<resolve::ModuleFiles> files_;
  transform::LookAhead<transform::OwnedRecord> held_;
  ModuleSizeReport report_;
};

std::unique_ptr<RepairKind> fix_module_sizes_kind();

}  // namespace pdfix::passes
