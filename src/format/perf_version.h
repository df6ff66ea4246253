// What each perf version can read: the attr size it takes, the record types and header features
// it knows, and which compressed and build-id forms it reads. `pdfix compat --for VERSION` rewrites
// only what the named reader lacks. The figures come from the kernel's tools/perf history; the
// machine's perf 6.1 is the one checked by the tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pdfix::format {

struct PerfVersion {
  int major = 0;
  int minor = 0;
  std::string text() const;
  friend auto operator<=>(const PerfVersion&, const PerfVersion&) = default;
};

// What a perf of some version reads.
struct ReaderProfile {
  PerfVersion version;
  uint32_t attr_size = 0;         // the largest perf_event_attr it takes ("unsupported ABI")
  uint32_t kernel_types_end = 0;  // it knows kernel record types [1, this)
  uint32_t user_types_end = 0;    // and user record types [64, this); others abort it
  int features_end = 0;           // its HEADER_LAST_FEATURE: features [1, this)
  bool compressed = false;        // COMPRESSED (81) records in a file
  bool compressed2 = false;       // COMPRESSED2 (83)
  bool compressed_in_pipe = false;
  bool build_id_mmap2 = false;  // MMAP2 records that carry a build-id (misc bit 14)

  bool knows_type(uint32_t type) const;
};

// "6.1", "5.10.0-21-amd64" (a kernel release string), "4.19", or "oldest": the widest audience.
absl::StatusOr<ReaderProfile> reader_profile(std::string_view version);

// The largest perf_event_attr perf `v` reads: it refuses a file with a larger one.
uint32_t attr_size_read_by(PerfVersion v);

}  // namespace pdfix::format
