// Build-id injection: every MMAP/MMAP2 of a file-backed mapping (kernel and modules included)
// becomes an MMAP2 carrying the build-id of what was mapped, when that can be known for certain;
// the build-id table gets an entry for every injected id it lacks. Everything else is kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "resolve/resolver.h"
#include "transform/pass.h"

namespace pdfix::passes {

struct InjectBuildIdsConfig {
  resolve::ResolverConfig resolver;
  std::optional<int64_t> recording_ended_at;  // see RecordingFacts::ended_at
};

// What happened to the maps, for the summary.
struct InjectReport {
  struct Map {
    std::string filename;
    std::string outcome;  // "upgraded", "had build-id", "left alone"
    std::string detail;   // source of the id, or why there is none
    std::string build_id;
    uint64_t records = 0;
  };
  uint64_t upgraded = 0;
  uint64_t already = 0;
  uint64_t left = 0;
  uint64_t table_entries_added = 0;
  std::map<std::string, uint64_t> left_by_reason;
  std::vector<Map> maps;  // one per file and outcome, in order of first appearance
};

class InjectBuildIds : public transform::Pass {
 public:
  explicit InjectBuildIds(InjectBuildIdsConfig config);

  std::string_view name() const override { return "inject-build-ids"; }
  // Only to know beforehand whether compressed data must be re-compressed; the rewrite itself
  // resolves maps as they come (the kernel map precedes the modules, as perf writes them).
  bool needs_analysis(const transform::Session& s) const override;
  bool wants(uint32_t type) const override;
  absl::Status analyze(const transform::RecordRef& r, const transform::Session& s) override;
  bool changes_records() const override { return !analysed_ || will_change_; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;

  const InjectReport& report() const { return report_; }

 private:
  struct Decision {
    const resolve::Resolution* resolution = nullptr;  // nullptr: the record keeps its own id
    resolve::MapQuery query;
  };
  // Learns what the resolver needs to know of the recording from the records that carry it.
  absl::Status observe(const transform::RecordRef& r, const transform::Session& s);
  void learn_header(const transform::Session& s);
  void learn_strings(const transform::Session& s);
  absl::StatusOr<Decision> decide(const transform::RecordRef& r, const transform::Session& s);
  void note(const std::string& filename, const std::string& outcome, const std::string& detail,
            const std::string& id);
  std::vector<uint8_t> table_entry(uint32_t type, const resolve::MapQuery& q,
                                   const resolve::BuildId& id, uint32_t pid,
                                   const format::Endian& e) const;

  InjectBuildIdsConfig config_;
  resolve::RecordingFacts facts_;
  resolve::Resolver resolver_;
  bool header_learned_ = false;
  bool analysed_ = false;
  bool will_change_ = false;
  InjectReport report_;
  std::map<std::pair<std::string, std::string>, size_t> report_index_;
  // Ids the table has (name + id), and the entries to add to it.
  absl::flat_hash_set<std::string> in_table_;
  std::vector<uint8_t> new_entries_;
  std::vector<uint8_t> buf_;
};

}  // namespace pdfix::passes
