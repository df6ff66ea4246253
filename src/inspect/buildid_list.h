// The build-ids a recording names, DSO by DSO, as `perf buildid-list` lists them: from the
// build-id table, HEADER_BUILD_ID records and MMAP2 records that carry an id.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inspect/dso_hits.h"
#include "io/input.h"

namespace pdfix::inspect {

struct BuildIdListOptions {
  // Only DSOs that samples fall in, callchain entries (user and kernel) included.
  bool hits = false;
  // Not perf's listing rules but every DSO that the table, HEADER_BUILD_ID records or map records
  // name, hit or not (unless `hits`): what the recording can be analysed with.
  bool every_source = false;
  // Read the samples even where the listing does not need them, to count each DSO's.
  bool count_samples = false;
  // The bound of what waits for its turn in time order (transform/look_ahead.h); tests make it
  // small.
  uint64_t look_ahead_bytes = transform::kLookAheadBytes;
};

using BuildIdListing = resolve::RecordedDsos;

// The listing made record by record, by whatever reads the records: list_build_ids over a file,
// or a pipeline over what it writes (inspect/listing_tap.h). perf's rules need the session as it
// is before the first record.
class DsoLister {
 public:
  DsoLister(const transform::Session& s, const BuildIdListOptions& options);
  // Whether samples must be read, and whether any record must.
  bool reads_samples() const { return read_samples_; }
  bool reads_records() const;
  // A record as it goes by (samples only when reads_samples()).
  absl::Status add(const transform::RecordRef& r, const transform::Session& s);
  // The file's own build-id table, whenever it is known (DsoHits::add_table).
  void add_table(std::span<const format::BuildIdEntry> table);
  // After the last record. `user_stacks`: whether an event of what was listed copies user stacks.
  BuildIdListing finish(const transform::Session& s, bool user_stacks);

 private:
  BuildIdListOptions options_;
  bool pipe_;
  bool with_hits_;
  bool read_samples_;
  DsoHits hits_;
  std::vector<format::BuildIdEntry> table_;  // the file's, then HEADER_BUILD_ID records'
};

// What perf buildid-list prints, perf's own rules included: a file with a build-id table lists
// the table; a stream, or a file without a table, lists the DSOs that sample addresses hit (perf
// 6.1 looks at the sample ip only), with or without an id. The table is listed by name, a later
// id for a file replacing an earlier one, as in perf; hits and `every_source` list one entry per
// machine, file and id: two files at one path (the host's and a container's) are two DSOs.
absl::StatusOr<BuildIdListing> list_build_ids(io::Input& in, const BuildIdListOptions& options);

}  // namespace pdfix::inspect
