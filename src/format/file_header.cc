#include "format/file_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <utility>

#include "format/error.h"

namespace pdfix::format {
namespace {

constexpr uint64_t kMagic2 = 0x32454c4946524550ULL;  // "PERFILE2" read as a little-endian u64
constexpr char kMagic1[8] = {'P', 'E', 'R', 'F', 'F', 'I', 'L', 'E'};
constexpr int kHostnameFeature = 3;
constexpr int kBuildIdFeature = 2;

// perf's legacy magic carries no byte order, so perf tells it by whether attr_size reads as a size
// an attr entry can have (attr + ids section, a multiple of 8) in host order or swapped.
bool plausible_attr_size(uint64_t v) { return v >= 64 + 16 && v <= 4096 && v % 8 == 0; }

Section read_section(const Endian& e, const uint8_t* p) { return {e.u64(p), e.u64(p + 8)}; }

// The bitmap was declared as unsigned long[], so a foreign-order file may have been written with
// 64-bit or 32-bit words. Like perf, try 64-bit words first and accept the reading in which the
// HOSTNAME bit (always set since 2011) is present; failing both, assume only BUILD_ID.
std::bitset<kFeatureBits> read_feature_bits(const Endian& e, const uint8_t* p) {
  std::bitset<kFeatureBits> bits;
  for (size_t w = 0; w < kFeatureBits / 64; ++w) {
    uint64_t word = e.u64(p + w * 8);
    for (size_t b = 0; b < 64; ++b) bits[w * 64 + b] = (word >> b) & 1U;
  }
  if (!e.is_swapped() || bits[kHostnameFeature]) return bits;
  bits.reset();
  for (size_t w = 0; w < kFeatureBits / 32; ++w) {
    uint32_t word = e.u32(p + w * 4);
    for (size_t b = 0; b < 32; ++b) bits[w * 32 + b] = (word >> b) & 1U;
  }
  if (bits[kHostnameFeature]) return bits;
  bits.reset();
  bits[kBuildIdFeature] = true;
  return bits;
}

}  // namespace

absl::StatusOr<FileHeader> parse_file_header(std::span<const uint8_t> bytes, bool whole_file) {
  if (bytes.size() < kPipeHeaderSize) {
    return malformed_at(0, "file too short for a perf.data header (", bytes.size(), " bytes)");
  }
  FileHeader h;
  // perf writes the magic as a u64 in its host's order: read in ours or swapped, it tells which.
  if (Endian::host().u64(bytes.data()) == kMagic2) {
    h.endian = Endian::host();
  } else if (Endian::swapped().u64(bytes.data()) == kMagic2) {
    h.endian = Endian::swapped();
  } else if (std::memcmp(bytes.data(), kMagic1, 8) == 0) {
    h.legacy_magic = true;
    if (bytes.size() < kLegacyFileHeaderSize) {
      return malformed_at(0, "truncated legacy header");
    }
    uint64_t attr_size = Endian::host().u64(bytes.data() + 16);
    h.endian = plausible_attr_size(attr_size) ? Endian::host() : Endian::swapped();
  } else {
    return malformed_at(0, "not a perf.data file (bad magic)");
  }
  const Endian& e = h.endian;
  h.header_size = e.u64(bytes.data() + 8);
  if (h.header_size == kPipeHeaderSize) {
    h.pipe = true;
    return h;
  }
  if (h.header_size != kFileHeaderSize && h.header_size != kLegacyFileHeaderSize) {
    return malformed_at(8, "unsupported header size ", h.header_size);
  }
  if (bytes.size() < h.header_size) {
    return malformed_at(0, "file ends inside the ", h.header_size, "-byte header");
  }
  const uint8_t* p = bytes.data();
  h.attr_size = e.u64(p + 16);
  h.attrs = read_section(e, p + 24);
  h.data = read_section(e, p + 40);
  h.event_types = read_section(e, p + 56);
  if (h.header_size == kFileHeaderSize) h.features = read_feature_bits(e, p + 72);
  if (!whole_file) return h;

  const uint64_t file_size = bytes.size();
  auto check = [&](const Section& s, uint64_t field, const char* name) -> absl::Status {
    if (s.offset > file_size || s.size > file_size - s.offset) {
      return malformed_at(field, name, " section [0x", absl::Hex(s.offset), ", +0x",
                          absl::Hex(s.size), ") runs past the end of the file (0x",
                          absl::Hex(file_size), " bytes)");
    }
    return absl::OkStatus();
  };
  if (auto s = check(h.attrs, 24, "attrs"); !s.ok()) return s;
  if (auto s = check(h.data, 40, "data"); !s.ok()) return s;
  if (auto s = check(h.event_types, 56, "event_types"); !s.ok()) return s;
  if (h.attrs.size > 0 && (h.attr_size < 64 + kFileSectionSize || h.attrs.size % h.attr_size)) {
    return malformed_at(16, "attr_size ", h.attr_size, " does not divide the attrs section (",
                        h.attrs.size, " bytes)");
  }
  if (h.data.offset < h.header_size) {
    return malformed_at(40, "data section overlaps the file header");
  }
  if (h.attrs.size > 0 && h.attrs.offset < h.data.end() && h.data.offset < h.attrs.end()) {
    return malformed_at(24, "attrs section overlaps the data section");
  }
  return h;
}

std::vector<uint8_t> encode_pipe_header(const Endian& e) {
  std::vector<uint8_t> head(kPipeHeaderSize);
  e.put_u64(head.data(), kMagic2);
  e.put_u64(head.data() + 8, kPipeHeaderSize);
  return head;
}

void patch_file_header(std::span<uint8_t> header_image, const FileHeader& h) {
  uint8_t* p = header_image.data();
  h.endian.put_u64(p + 16, h.attr_size);
  const std::array<std::pair<size_t, Section>, 3> sections{
      {{24, h.attrs}, {40, h.data}, {56, h.event_types}}};
  for (const auto& [at, s] : sections) {
    h.endian.put_u64(p + at, s.offset);
    h.endian.put_u64(p + at + 8, s.size);
  }
}

void patch_feature_bits(std::span<uint8_t> header_image, const FileHeader& h) {
  for (size_t w = 0; w < kFeatureBits / 64; ++w) {
    uint64_t word = 0;
    for (size_t b = 0; b < 64; ++b) word |= uint64_t{h.features[w * 64 + b]} << b;
    h.endian.put_u64(header_image.data() + kLegacyFileHeaderSize + 8 * w, word);
  }
}

std::vector<uint8_t> encode_feature_table(std::vector<FeatureSection> sections, const Endian& e) {
  std::sort(sections.begin(), sections.end(),
            [](const FeatureSection& a, const FeatureSection& b) { return a.id < b.id; });
  std::vector<uint8_t> table(kFileSectionSize * sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    e.put_u64(table.data() + kFileSectionSize * i, sections[i].section.offset);
    e.put_u64(table.data() + kFileSectionSize * i + 8, sections[i].section.size);
  }
  return table;
}

absl::StatusOr<std::vector<EventAttr>> parse_attrs_section(std::span<const uint8_t> file,
                                                           const FileHeader& h) {
  std::vector<EventAttr> attrs;
  // Each entry: the attr, then the {offset, size} of its ids, u64s elsewhere in the file.
  for (uint64_t at = h.attrs.offset; at < h.attrs.end(); at += h.attr_size) {
    const uint64_t attr_bytes = h.attr_size - kFileSectionSize;
    auto attr = parse_attr(file.data() + at, attr_bytes, h.endian, at);
    if (!attr.ok()) return attr.status();
    const Section ids = read_section(h.endian, file.data() + at + attr_bytes);
    if (ids.offset > file.size() || ids.size > file.size() - ids.offset || ids.size % 8) {
      return malformed_at(at + attr_bytes, "ids of attr ", (at - h.attrs.offset) / h.attr_size,
                          " [0x", absl::Hex(ids.offset), ", +", ids.size, ") are out of the file");
    }
    for (uint64_t i = 0; i < ids.size; i += 8) {
      attr->ids.push_back(h.endian.u64(file.data() + ids.offset + i));
    }
    attrs.push_back(*std::move(attr));
  }
  return attrs;
}

absl::StatusOr<std::vector<FeatureSection>> parse_feature_table(std::span<const uint8_t> file,
                                                                const FileHeader& h) {
  std::vector<FeatureSection> table;
  uint64_t at = h.feature_table_offset();
  // perf record writes the data size and the feature sections when it ends the file: records
  // after a header that still says 0, and no table there, are a recording whose perf was killed.
  const auto unfinished = [&]() -> std::optional<absl::Status> {
    if (h.data.size != 0 || file.size() <= h.data.offset) return std::nullopt;
    return malformed_at(40, "the header was never finished (data size 0, with 0x",
                        absl::Hex(file.size() - h.data.offset),
                        " bytes after it): perf record was killed or crashed before it ended "
                        "this file");
  };
  for (size_t id = 0; id < kFeatureBits; ++id) {
    if (!h.features[id]) continue;
    if (at > file.size() || file.size() - at < kFileSectionSize) {
      if (auto why = unfinished()) return *why;
      return malformed_at(at, "feature table entry for feature ", id, " runs past the end");
    }
    Section s = read_section(h.endian, file.data() + at);
    if (s.offset > file.size() || s.size > file.size() - s.offset) {
      if (auto why = unfinished()) return *why;
      return malformed_at(at, "feature ", id, " section [0x", absl::Hex(s.offset), ", +0x",
                          absl::Hex(s.size), ") runs past the end of the file");
    }
    table.push_back({static_cast<int>(id), s});
    at += kFileSectionSize;
  }
  return table;
}

}  // namespace pdfix::format
