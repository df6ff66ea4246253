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
#include "transform/record.h"

namespace pdfix::transform {

class Session {
 public:
  // File mode: parses attrs and the feature table from the mapped file.
  static absl::StatusOr<Session> from_file(std::span<const uint8_t> file,
                                           const format::FileHeader& header);
  static Session from_pipe(const format::FileHeader& header);

  const format::FileHeader& header() const { return header_; }
  const format::Endian& endian() const { return header_.endian; }
  bool pipe() const { return header_.pipe; }
  // A file whose records are zstd-compressed: the pipeline dry-runs the passes over it first, to
  // know whether the data has to be compressed anew.
  bool compressed_file() const { return !pipe() && feature(format::kFeatCompressed).has_value(); }
  const std::vector<format::EventAttr>& attrs() const { return attrs_; }
  // File mode: the attrs section as stored (entries of header().attr_size bytes); empty for a
  // stream.
  std::span<const uint8_t> attrs_section() const;

  // Pipe mode learns events and features from records as they stream by; both modes learn
  // HEADER_BUILD_ID records into the build-id table.
  absl::Status observe(const RecordRef& r);

  // What the recording says about itself, parsed once for every pass and verb.
  const format::BuildIdTable& build_id_table() const { return table_; }
  const std::string& hostname() const { return hostname_; }
  const std::string& osrelease() const { return osrelease_; }
  const std::string& arch() const { return arch_; }
  // Where each machine's kernel image starts (its _text address), learned from the kernel maps.
  std::optional<uint64_t> kernel_start(uint64_t machine) const;

  // Decodes and classifies an MMAP/MMAP2 record; a kernel map teaches where its kernel starts.
  absl::StatusOr<Map> learn_map(const RecordRef& r);

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
  void learn_strings();
  void learn_event_names();

  format::FileHeader header_;
  std::span<const uint8_t> file_;
  std::vector<format::EventAttr> attrs_;
  absl::flat_hash_map<uint64_t, size_t> id_to_attr_;
  std::optional<uint32_t> sample_id_at_;  // the first event's format::sample_id_position
  bool uniform_trailer_ = true;           // every event lays out the sample_id trailer alike
  std::vector<format::FeatureSection> features_;
  std::map<int, std::vector<uint8_t>> pipe_features_;
  std::vector<std::string> desc_names_;
  format::BuildIdTable table_;
  std::string hostname_;
  std::string osrelease_;
  std::string arch_;
  std::map<uint64_t, uint64_t> kernel_start_;
};

}  // namespace pdfix::transform
