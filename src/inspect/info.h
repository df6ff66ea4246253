// `pdfix info`: what a recording holds. Counts are of records as perf delivers them, i.e. after
// decompression, so they can be compared with `perf report --stats`.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/input.h"

namespace pdfix::inspect {

struct EventInfo {
  std::string name;
  uint32_t type = 0;
  uint64_t config = 0;
  uint32_t attr_size = 0;
  uint64_t sample_type = 0;
  uint64_t ids = 0;
};

struct FeatureInfo {
  int id = 0;
  std::string name;
  uint64_t size = 0;
  std::string value;  // a short decoded summary, where pdfix decodes the feature
};

struct Info {
  std::string path;
  bool pipe = false;
  bool big_endian = false;
  uint64_t header_size = 0;
  uint64_t file_size = 0;  // 0 for a stream
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  std::vector<EventInfo> events;
  std::vector<FeatureInfo> features;
  std::map<std::string, uint64_t> record_counts;  // by perf's record name
  uint64_t records = 0;
  uint64_t trailing_bytes = 0;  // after the last record of a stream (see RecordRef::trailing)
  // perf record never ended the file (format/unfinished.h): read as salvaged, with `cut` bytes
  // lost at its end.
  bool unfinished = false;
  uint64_t cut = 0;
};

absl::StatusOr<Info> collect_info(io::Input& in);
void print_info_text(const Info& info, std::ostream& os);
void print_info_json(const Info& info, std::ostream& os);

}  // namespace pdfix::inspect
