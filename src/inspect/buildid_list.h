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

// What perf buildid-list prints, perf's own rules included: a file with a build-id table lists
// the table; a stream, or a file without a table, lists the DSOs that sample addresses hit (perf
// 6.1 looks at the sample ip only), with or without an id. The table is listed by name, a later
// id for a file replacing an earlier one, as in perf; hits and `every_source` list one entry per
// machine, file and id: two files at one path (the host's and a container's) are two DSOs.
absl::StatusOr<BuildIdListing> list_build_ids(io::Input& in, const BuildIdListOptions& options);

}  // namespace pdfix::inspect
