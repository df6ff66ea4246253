// Build-id injection: every MMAP/MMAP2 of a file-backed mapping (kernel and modules included)
// becomes an MMAP2 carrying the build-id of what was mapped, when that can be known for certain;
// the build-id table gets an entry for every injected id it lacks. Everything else is kept.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "passes/repair.h"
#include "resolve/resolver.h"
#include "transform/rebuilt.h"

namespace pdfix::passes {

// What inject's options add to the run's one resolver (passes::common_for assembles it).
struct InjectBuildIdsConfig {
  std::map<std::string, format::BuildId> known;  // --known-build-ids
  std::string buildid_dir;                       // --buildid-dir
};

// What became of a map, or of the id its record carried.
enum class MapOutcome { kUpgraded, kHadBuildId, kLeftAlone, kNotAddedToTable };
std::string_view name(MapOutcome o);

// What happened to the maps, for the summary.
struct InjectReport {
  struct Map {
    std::string filename;
    MapOutcome outcome = MapOutcome::kLeftAlone;
    std::string detail;  // source of the id, or why there is none
    std::string build_id;
    uint64_t records = 0;
    bool kept_by_path = false;  // left alone: proven, with no build-id of its own
  };
  uint64_t upgraded = 0;
  uint64_t already = 0;
  uint64_t left = 0;
  // MMAP2s whose MMAP_BUILD_ID bit the kernel leaked onto their dev/ino (format::MmapRecord),
  // written with it cleared, or upgraded.
  uint64_t leaked_bits_cleared = 0;
  // Maps of memory with no file (format::may_carry_build_id) whose records carried an id anyway:
  // written without it.
  uint64_t ids_without_file_removed = 0;
  uint64_t table_entries_added = 0;  // for ids the pass injected
  // For ids the map records already carried (perf record --buildid-mmap, perf >= 6.17).
  uint64_t table_entries_from_records = 0;
  // Ids in records that contradict the table or another file's id: not added.
  uint64_t table_entries_contradicted = 0;
  std::map<std::string, uint64_t> left_by_reason;
  std::map<std::string, uint64_t> upgraded_by_source;  // the file, /proc/PID/root, --search DIR
  // "path id" of table entries perf filed from this host's file for maps that were another file.
  std::vector<std::string> table_entries_removed;
  // One per path, outcome, detail and id, in order of first appearance: two files at one path (a
  // host's and a container's) may fare differently, and each is told.
  std::vector<Map> maps;
};

class InjectBuildIds : public Repair {
 public:
  explicit InjectBuildIds(const Common& common);

  std::string_view name() const override { return "inject-build-ids"; }
  std::vector<transform::PassFinding> findings() const override;
  bool wants(uint32_t type) const override;
  // Maps are resolved as they come: the kernel map precedes the modules, as perf writes them.
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;

  const InjectReport& report() const { return report_; }

 private:
  // Keeps in_table_ up with the session's table, and with entries earlier passes inserted.
  void learn_table(const transform::RecordRef& r, const transform::Session& s);
  // Lists `id` for r's map in the table (a stream: a HEADER_BUILD_ID record ahead of it) unless it
  // is there already, or, for an id the record carried, something contradicts it.
  absl::Status add_to_table(const transform::RecordRef& r, const format::BuildId& id,
                            bool from_record, const transform::Session& s,
                            transform::RecordSink& out);
  // `table` less the entries the resolver found to be another file's than any map of their path.
  std::vector<uint8_t> without_unproven(std::vector<uint8_t> table, format::Endian endian);
  void know(uint64_t machine, const std::string& name, const format::BuildId& id);
  void note(const std::string& filename, MapOutcome outcome, const std::string& detail,
            const std::string& id, bool kept_by_path = false);

  Common common_;
  std::shared_ptr<resolve::Resolver> resolver_;
  InjectReport report_;
  std::map<std::tuple<std::string, MapOutcome, std::string, std::string>, size_t> report_index_;
  // The table's (machine, name, id) entries, and what else is known of each name and id: the
  // ids a name has in the table, the first file a machine's maps gave an id.
  absl::flat_hash_set<std::string> in_table_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> table_ids_;
  absl::flat_hash_map<std::string, std::string> file_of_id_;
  size_t table_seen_ = 0;  // session table entries already in in_table_
  struct NewEntry {
    std::string key;
    bool from_record = false;
    std::vector<uint8_t> bytes;
  };
  std::vector<NewEntry> new_entries_;  // file mode: added to the table at finish()
  transform::Rebuilt rebuilt_;
  transform::Rebuilt inserted_;
};

std::unique_ptr<RepairKind> inject_build_ids_kind();

}  // namespace pdfix::passes
