// Module-size repair: kernel-module maps whose extent is impossible (running to the top of the
// address space, past the architecture's module area, over the next module or the kernel image)
// get the length the best available evidence gives. Only the len field of those records changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "resolve/build_id.h"
#include "resolve/module_files.h"
#include "resolve/proc_modules.h"
#include "transform/owned_record.h"
#include "transform/pass.h"

namespace pdfix::passes {

struct FixModuleSizesConfig {
  std::optional<resolve::ProcModules> proc_modules;  // the recording host's /proc/modules
  std::string sysroot;
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
  std::vector<Change> changed;
  std::vector<Unresolved> unresolved;  // judged wrong, but no evidence to repair it with
};

class FixModuleSizes : public transform::Pass {
 public:
  explicit FixModuleSizes(FixModuleSizesConfig config);

  std::string_view name() const override { return "fix-module-sizes"; }
  bool wants(uint32_t type) const override;
  // Compressed files only: whether anything changes decides whether data is re-compressed.
  bool needs_analysis(const transform::Session& s) const override;
  absl::Status analyze(const transform::RecordRef& r, const transform::Session& s) override;
  absl::Status plan(const transform::Session& s, transform::FeatureEdits& edits) override;
  bool changes_records() const override { return !analysed_ || will_change_; }
  // perf writes the module maps as one run, right after the kernel map: the pass holds such a run
  // back until it ends, then judges each map knowing its neighbours.
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  bool holding() const override { return !held_.empty(); }
  absl::Status release(const transform::Session& s, transform::RecordSink& out) override;

  const ModuleSizeReport& report() const { return report_; }

  struct ModuleMap {
    std::string filename;
    uint16_t misc = 0;
    uint32_t pid = 0;
    uint64_t start = 0;
    uint64_t len = 0;
    std::optional<resolve::BuildId> build_id;  // the record's own
  };
  struct Fix {
    uint64_t new_len = 0;
    std::string problem;
    std::string evidence;
  };

 private:
  struct Held {
    transform::OwnedRecord record;
    ModuleMap map;
  };
  // A module map, or nullopt for any other record (a kernel map teaches where the kernel is).
  absl::StatusOr<std::optional<ModuleMap>> module_map(const transform::RecordRef& r,
                                                      const transform::Session& s);
  void learn_ids(const transform::Session& s);
  void learn_id_record(const transform::RecordRef& r, const transform::Session& s);
  // One entry per map, nullopt where the map stays as it is; fills `unresolved` as it judges.
  std::vector<std::optional<Fix>> plan_fixes(const std::vector<const ModuleMap*>& maps,
                                             const transform::Session& s,
                                             std::vector<ModuleSizeReport::Unresolved>& unresolved);
  std::optional<Fix> from_module_file(const ModuleMap& m, const transform::Session& s);

  FixModuleSizesConfig config_;
  std::optional<resolve::ModuleFiles> files_;
  bool analysed_ = false;
  bool will_change_ = false;
  bool ids_learned_ = false;
  std::vector<ModuleMap> analysis_run_;
  std::vector<Held> held_;
  // Kernel image start (its _text address) per machine: cpumode and pid.
  absl::flat_hash_map<uint64_t, uint64_t> kernel_start_;
  // Build-ids the recording knows per module name, to check a module file against.
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> known_ids_;
  ModuleSizeReport report_;
};

}  // namespace pdfix::passes
