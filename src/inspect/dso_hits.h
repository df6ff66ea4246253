// Which DSOs sample addresses fall in, by perf's rules: machines, threads (forks included) and
// their maps, with records delivered in time order as perf's ordered events deliver them. What
// `buildid-list --hits` lists, and which maps without a build-id `check` counts as mattering.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "format/feature.h"
#include "resolve/recorded_dsos.h"
#include "transform/look_ahead.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::inspect {

using resolve::DsoBuildId;

class DsoHits {
 public:
  // With `callchains`, every callchain entry counts as a hit, not only the sample's ip. What waits
  // for its turn in time order is bounded by `look_ahead_bytes` (transform/look_ahead.h).
  explicit DsoHits(bool callchains, uint64_t look_ahead_bytes = transform::kLookAheadBytes);
  ~DsoHits();
  DsoHits(const DsoHits&) = delete;
  DsoHits& operator=(const DsoHits&) = delete;

  // The file's own build-id table (the BUILD_ID feature), whenever it is known: its DSOs are
  // listed first, as a reader of the file learns the table before any record. A listing of what a
  // pipeline writes learns it last, from the passes' edits.
  void add_table(std::span<const format::BuildIdEntry> entries);
  // Build-id table entries, as they are learned (HEADER_BUILD_ID records): they name DSOs and give
  // their ids.
  void add_entries(std::span<const format::BuildIdEntry> entries);
  // One record: maps, forks, execs (COMM), samples and FINISHED_ROUND count; other records are
  // ignored.
  absl::Status add(const transform::RecordRef& r, const transform::Session& s);
  // After the last record: delivers what still waits for its turn.
  void finish();

  // Every DSO seen, in the order first seen: one per machine, file and build-id (the id its map
  // records carry, else the table's only id for its name; "" when there is none or several).
  const std::vector<DsoBuildId>& dsos() const;
  bool was_hit(size_t dso) const;
  // Samples whose own ip (not a callchain entry) falls in `dso`, and samples in all: the share of
  // a report's self time that the DSO's symbols explain.
  uint64_t samples(size_t dso) const;
  uint64_t total_samples() const;
  // How often what waited for its turn passed the bound and was applied early.
  uint64_t early_flushes() const;
  // Whether samples hit the file a map record without a build-id, of `misc`, `pid` and
  // `filename`, maps.
  bool was_hit(uint16_t misc, uint32_t pid, std::string_view filename) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pdfix::inspect
