// Repair of wrong build-ids in map records. perf 6.17 (until the fix in 7.0, backported to 6.18.y)
// gave every kernel-module MMAP2 after the first the first module's build-id. An id that maps of
// two different files carry, or that the build-id table contradicts, is suspect: it is replaced by
// the id the evidence proves (the table, the module file under --sysroot, the running kernel's
// notes for a recording of this boot), or removed when nothing proves one. Never left.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/repair.h"
#include "resolve/resolver.h"
#include "transform/look_ahead.h"
#include "transform/owned_record.h"
#include "transform/rebuilt.h"

namespace pdfix::passes {

// What became of a map record's wrong id: another proven in its place, or none.
enum class IdRepair { kRepaired, kRemoved };
std::string_view name(IdRepair r);

struct RepairBuildIdsReport {
  struct Map {
    std::string filename;
    IdRepair outcome = IdRepair::kRemoved;
    std::string was;  // the wrong id
    std::string now;  // the proven one; empty when removed
    std::string why;  // what made it suspect, and the evidence
  };
  uint64_t maps_with_ids = 0;
  std::vector<Map> maps;
  uint64_t early_flushes = 0;  // runs of kernel maps judged before their end
};

class RepairBuildIds : public Repair {
 public:
  explicit RepairBuildIds(const Common& common);

  std::string_view name() const override { return "repair-build-ids"; }
  bool wants(uint32_t type) const override;
  // The kernel map and the module maps after it are held until the run ends: only then is it
  // known which ids two modules share.
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  bool holding() const override { return !held_.empty(); }
  absl::Status release(const transform::Session& s, transform::RecordSink& out) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;

  const RepairBuildIdsReport& report() const { return report_; }

 private:
  // `r`, or what stands for it when its id is suspect for the reason `why`.
  absl::Status judge(const transform::RecordRef& r, const std::string& why,
                     const transform::Session& s, transform::RecordSink& out);
  // Why the table contradicts the id `m` carries; nullopt when it does not.
  std::optional<std::string> table_says_otherwise(const transform::Map& m,
                                                  const transform::Session& s) const;

  Common common_;
  std::shared_ptr<resolve::Resolver> resolver_;
  transform::LookAhead<transform::OwnedRecord> held_;
  transform::Rebuilt rebuilt_;
  RepairBuildIdsReport report_;
};

std::unique_ptr<RepairKind> repair_build_ids_kind();

}  // namespace pdfix::passes
