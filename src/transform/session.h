// What the reader knows about a recording beyond single records: its header, events (attrs) and
// the id -> event map, and its feature sections. Passes read it to interpret records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "format/attr.h"
#include "format/feature.h"
#include "format/file_header.h"
#include "format/records.h"

namespace pdfix::transform {

// One record as it flows through pdfix: a view of its bytes (payload of TRACING_DATA/AUXTRACE
// included) and where it came from.
struct RecordRef {
  std::span<const uint8_t> bytes;
  format::RecordHeader header;
  uint64_t offset = 0;        // file or stream offset; for a record decoded from compressed data,
                              // the offset of the compressed record that completed it
  uint64_t inner_offset = 0;  // offset in the decompressed stream, when `inner`
  bool inner = false;         // decoded from a COMPRESSED/COMPRESSED2 record
  bool original = true;       // bytes are the input's own (not made by a pass)
  // Bytes after the last record of a stream that are no record (perf's own messages captured into
  // a piped recording, say). perf stops reading there; pdfix keeps them as they are.
  bool trailing = false;
};

class Session {
 public:
  // File mode: parses attrs and the feature table from the mapped file.
  static absl::StatusOr<Session> from_file(std::span<const uint8_t> file,
                                           const format::FileHeader& header);
  static Session from_pipe(const format::FileHeader& header);

  const format::FileHeader& header() const { return header_; }
  const format::Endian& endian() const { return header_.endian; }
  bool pipe() const { return header_.pipe; }
  // A file whose records are zstd-compressed: the one case where a pass must read the records
  // before rewriting, to know whether the data has to be compressed anew.
  bool compressed_file() const { return !pipe() && feature(format::kFeatCompressed).has_value(); }
  const std::vector<format::EventAttr>& attrs() const { return attrs_; }

  // Pipe mode learns events and features from records as they stream by.
  absl::Status observe(const RecordRef& r);

  // The event a record belongs to, by its sample id; nullptr when it cannot be told.
  const format::EventAttr* attr_for(const RecordRef& r) const;
  // Length of the sample_id trailer at the end of `r` (0 for records that have none).
  uint32_t trailer_size(const RecordRef& r) const;
  // Event names: from EVENT_DESC when present, else perf's defaults.
  std::string event_name(size_t attr_index) const;

  // File mode: the feature table; pipe mode: features seen as HEADER_FEATURE records.
  const std::vector<format::FeatureSection>& feature_table() const { return features_; }
  std::optional<format::FeatureBytes> feature(int id) const;

 private:
  explicit Session(const format::FileHeader& h) : header_(h) {}
  absl::Status add_attr(format::EventAttr attr);

  format::FileHeader header_;
  std::span<const uint8_t> file_;
  std::vector<format::EventAttr> attrs_;
  absl::flat_hash_map<uint64_t, size_t> id_to_attr_;
  bool uniform_trailer_ = true;  // every event lays out the sample_id trailer alike
  std::vector<format::FeatureSection> features_;
  std::map<int, std::vector<uint8_t>> pipe_features_;
  std::vector<std::string> desc_names_;
};

}  // namespace pdfix::transform
