// The perf.data file header (file mode: 104 bytes, or 72 before feature bits existed; pipe mode: 16
// bytes) and the feature section table that follows the data section.
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "format/attr.h"
#include "format/byte_order.h"

namespace pdfix::format {

struct Section {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t end() const { return offset + size; }
};

inline constexpr uint64_t kPipeHeaderSize = 16;
inline constexpr uint64_t kFileHeaderSize = 104;
inline constexpr uint64_t kLegacyFileHeaderSize = 72;  // before the feature bitmap
inline constexpr uint64_t kFileSectionSize = 16;       // {u64 offset, u64 size}
inline constexpr size_t kFeatureBits = 256;

struct FileHeader {
  Endian endian = Endian::host();
  bool pipe = false;
  bool legacy_magic = false;  // "PERFFILE", perf before 2.6.37
  uint64_t header_size = 0;
  uint64_t attr_size = 0;  // bytes per entry of the attrs section: attr + its ids section
  Section attrs;
  Section data;
  Section event_types;
  std::bitset<kFeatureBits> features;
  // A file perf record never ended, read as format/unfinished.h salvages it: the bytes lost at its
  // end (after the last whole record).
  bool unfinished = false;
  uint64_t cut = 0;

  // Where perf reads the feature table from.
  uint64_t feature_table_offset() const { return data.end(); }
  // Written by Android's simpleperf, whose feature numbers start at 128 (perf's end near 40) and
  // whose framing differs from perf's in two records: see RecordReader::frame.
  bool simpleperf() const { return !pipe && (features >> kSimpleperfFirstFeature).any(); }
  static constexpr size_t kSimpleperfFirstFeature = 128;
};

// Parses the header at the start of `bytes`. `bytes` is the whole file when `whole_file`, and then
// the sections are checked against its size; a stream passes what it has seen so far.
absl::StatusOr<FileHeader> parse_file_header(std::span<const uint8_t> bytes,
                                             bool whole_file = true);

// The 16-byte header that begins a stream (perf record -o -).
std::vector<uint8_t> encode_pipe_header(const Endian& e);

// Writes `h`'s attr_size and its attrs, data and event_types sections into an existing header
// image; the magic, the size and the feature bitmap are kept as they were.
void patch_file_header(std::span<uint8_t> header_image, const FileHeader& h);

// Writes `h`'s feature bitmap into a 104-byte header image, in 64-bit words as perf writes it. A
// foreign file may have been written in 32-bit words: call this only when the set changed.
void patch_feature_bits(std::span<uint8_t> header_image, const FileHeader& h);

struct FeatureSection {
  int id = 0;
  Section section;
};

// The feature table: one {offset, size} per set bit, in bit order, at data.end().
absl::StatusOr<std::vector<FeatureSection>> parse_feature_table(std::span<const uint8_t> file,
                                                                const FileHeader& h);
// The feature table's bytes for `sections`: ordered by feature id, as perf reads them.
std::vector<uint8_t> encode_feature_table(std::vector<FeatureSection> sections, const Endian& e);

// The attrs of the attrs section, each with the event ids its ids section lists.
absl::StatusOr<std::vector<EventAttr>> parse_attrs_section(std::span<const uint8_t> file,
                                                           const FileHeader& h);

}  // namespace pdfix::format
