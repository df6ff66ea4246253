// Writing for an older reader (`pdfix compat --for VERSION`, `fix --for VERSION`): what the named
// perf cannot read is rewritten, and only that. Attrs larger than it takes are shrunk when the
// fields it lacks are zero (refused, the field named, when they are not); compressed data becomes
// a type it reads, or plain records; record types it would abort on are dropped, counted by type,
// except CALLCHAIN_DEFERRED, which is stitched into the samples that wait for it, as new perf does
// when it reads them; feature sections it does not know are dropped; MMAP2 records that carry a
// build-id become plain MMAP2 for readers before 5.12, their ids listed in the build-id table.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/perf_version.h"
#include "format/sample_fields.h"
#include "passes/repair.h"
#include "transform/look_ahead.h"
#include "transform/owned_record.h"
#include "transform/rebuilt.h"

namespace pdfix::passes {

struct CompatReport {
  std::string target;           // "6.1"; empty: no --for, nothing done
  uint64_t attrs_shrunk = 0;    // attrs (file: in the attrs section; stream: ATTR records)
  uint32_t attr_size_from = 0;  // the largest in the input
  uint32_t attr_size_to = 0;
  std::string compression;                          // "kept", "COMPRESSED", "plain"
  std::map<std::string, uint64_t> dropped_records;  // by type name
  std::vector<std::string> dropped_features;
  uint64_t build_id_maps_made_plain = 0;
  uint64_t table_entries_added = 0;
  uint64_t callchains_stitched = 0;
  uint64_t callchains_cut = 0;  // samples whose user callchain never came: kernel part kept
  uint64_t early_flushes = 0;   // times the waiting samples were sent on at the look-ahead's bound
};

class Compat : public Repair {
 public:
  explicit Compat(std::optional<format::ReaderProfile> target,
                  uint64_t look_ahead_bytes = transform::kLookAheadBytes);

  std::string_view name() const override { return "compat"; }
  bool wants(uint32_t type) const override;
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;
  std::optional<uint32_t> compressed_output(const transform::Session& s) const override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;

  const CompatReport& report() const { return report_; }

 private:
  absl::Status shrink_attr_record(const transform::RecordRef& r, const transform::Session& s,
                                  transform::RecordSink& out);
  absl::Status feature_record(const transform::RecordRef& r, const transform::Session& s,
                              transform::RecordSink& out);
  absl::Status plain_map(const transform::RecordRef& r, const transform::Session& s,
                         transform::RecordSink& out);
  absl::Status sample(const transform::RecordRef& r, const transform::Session& s,
                      transform::RecordSink& out);
  absl::Status deferred(const transform::RecordRef& r, const transform::Session& s,
                        transform::RecordSink& out);
  // A waiting sample goes out with its callchain completed by `user` (or, with none, cut before
  // the marker).
  absl::Status send_waiting(transform::OwnedRecord& sample, const format::SampleFields& fields,
                            const std::vector<uint64_t>* user, const transform::Session& s,
                            transform::RecordSink& out);
  // The FINISHED_ROUND held while samples waited, once none waits: after `after`.
  absl::Status end_held_round(const transform::RecordRef& after, const transform::Session& s,
                              transform::RecordSink& out);
  // An attr image shrunk to the target's size, or an error naming the field that would be lost.
  absl::StatusOr<std::vector<uint8_t>> shrink(std::span<const uint8_t> attr, uint32_t size,
                                              const format::Endian& e, uint64_t offset);
  void drop(uint32_t type) { ++report_.dropped_records[format_type(type)]; }
  static std::string format_type(uint32_t type);

  std::optional<format::ReaderProfile> target_;
  CompatReport report_;
  transform::Rebuilt rebuilt_;
  // Table entries (machine, name, id) known or added: the session's (up to table_seen_), earlier
  // passes' HEADER_BUILD_ID records, this pass's.
  std::set<std::string> listed_;
  size_t table_seen_ = 0;
  // File mode: (key, entry) for the table at finish(), where an earlier pass's may be already.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> new_entries_;
  void list(const std::vector<format::BuildIdEntry>& entries, std::set<std::string>& into) const;

  struct Waiting {
    uint32_t tid = 0;
    uint64_t cookie = 0;
    format::SampleFields fields;  // where the record's callchain is
    transform::OwnedRecord record;
  };
  transform::LookAhead<Waiting> waiting_;
  bool round_held_ = false;  // a FINISHED_ROUND came while samples waited
};

std::unique_ptr<RepairKind> compat_kind();

}  // namespace pdfix::passes
