#include "format/attr.h"

#include <algorithm>
#include <array>
#include <bit>

#include "absl/strings/str_cat.h"
#include "format/error.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::format {
namespace {

constexpr uint64_t kTrailerFields =
    kSampleTid | kSampleTime | kSampleId | kSampleStreamId | kSampleCpu | kSampleIdentifier;

constexpr std::array<const char*, 10> kHardwareNames = {"cycles",
                                                        "instructions",
                                                        "cache-references",
                                                        "cache-misses",
                                                        "branches",
                                                        "branch-misses",
                                                        "bus-cycles",
                                                        "stalled-cycles-frontend",
                                                        "stalled-cycles-backend",
                                                        "ref-cycles"};
constexpr std::array<const char*, 13> kSoftwareNames = {"cpu-clock",
                                                        "task-clock",
                                                        "page-faults",
                                                        "context-switches",
                                                        "cpu-migrations",
                                                        "minor-faults",
                                                        "major-faults",
                                                        "alignment-faults",
                                                        "emulation-faults",
                                                        "dummy",
                                                        "bpf-output",
                                                        "cgroup-switches",
                                                        "dummy"};

}  // namespace

uint64_t EventAttr::trailer_fields() const {
  return sample_id_all() ? sample_type & kTrailerFields : 0;
}

uint32_t EventAttr::trailer_size() const {
  if (!sample_id_all()) return 0;
  return 8 * static_cast<uint32_t>(std::popcount(sample_type & kTrailerFields));
}

std::string EventAttr::default_name() const {
  switch (type) {
    case 0:
      if (config < kHardwareNames.size()) return kHardwareNames[config];
      break;
    case 1:
      if (config < kSoftwareNames.size()) return kSoftwareNames[config];
      break;
    case 2:
      return absl::StrCat("tracepoint:", config);
    case 3:
      return absl::StrCat("hw-cache:0x", absl::Hex(config));
    case 4:
      return absl::StrCat("raw 0x", absl::Hex(config));
    case 5:
      return "breakpoint";
    default:
      break;
  }
  return absl::StrCat("type ", type, " config 0x", absl::Hex(config));
}

absl::StatusOr<EventAttr> parse_attr(const uint8_t* p, uint64_t available, const Endian& e,
                                     uint64_t file_offset) {
  if (available < kAttrSizeVer0) {
    return malformed_at(file_offset, "perf_event_attr needs 64 bytes, ", available, " left");
  }
  EventAttr a;
  a.type = e.u32(p);
  a.size = e.u32(p + kAttrSizeOffset);
  a.config = e.u64(p + 8);
  a.sample_period = e.u64(p + 16);
  a.sample_type = e.u64(p + kAttrSampleTypeOffset);
  a.read_format = e.u64(p + 32);
  a.flags = e.attr_flags(p + kAttrFlagsOffset);
  const uint64_t size = std::min<uint64_t>(available, a.size == 0 ? kAttrSizeVer0 : a.size);
  if (size >= kAttrBranchSampleTypeOffset + 8) {
    a.branch_sample_type = e.u64(p + kAttrBranchSampleTypeOffset);
  }
  if (size >= kAttrSampleStackUserOffset + 8) {
    a.sample_regs_user = e.u64(p + kAttrSampleRegsUserOffset);
    a.sample_stack_user = e.u32(p + kAttrSampleStackUserOffset);
  }
  if (size >= kAttrClockidOffset + 4) a.clockid = e.s32(p + kAttrClockidOffset);
  return a;
}

absl::StatusOr<EventAttr> decode_attr_record(std::span<const uint8_t> record, const Endian& e,
                                             uint64_t file_offset) {
  if (record.size() < kRecordHeaderSize) {
    return malformed_at(file_offset, "ATTR record of ", record.size(), " bytes");
  }
  const std::span<const uint8_t> body = record.subspan(kRecordHeaderSize);
  auto attr = parse_attr(body.data(), body.size(), e, file_offset + kRecordHeaderSize);
  if (!attr.ok()) return attr.status();
  const uint64_t attr_size = attr->size == 0 ? kAttrSizeVer0 : attr->size;
  if (attr_size > body.size()) {
    return malformed_at(file_offset, "ATTR record of ", record.size(), " bytes holds an attr of ",
                        attr_size);
  }
  for (uint64_t at = attr_size; at + 8 <= body.size(); at += 8) {
    attr->ids.push_back(e.u64(body.data() + at));
  }
  return attr;
}

std::optional<uint32_t> sample_id_position(uint64_t sample_type) {
  if (sample_type & kSampleIdentifier) return 0;
  if (!(sample_type & kSampleId)) return std::nullopt;
  uint32_t pos = 0;
  for (uint64_t f : {kSampleIp, kSampleTid, kSampleTime, kSampleAddr}) {
    if (sample_type & f) ++pos;
  }
  return pos;
}

std::optional<uint32_t> trailer_id_position_from_end(uint64_t sample_type) {
  if (sample_type & kSampleIdentifier) return 1;
  if (!(sample_type & kSampleId)) return std::nullopt;
  uint32_t pos = 1;
  for (uint64_t f : {kSampleCpu, kSampleStreamId}) {
    if (sample_type & f) ++pos;
  }
  return pos;
}

std::optional<uint64_t> record_event_id(std::span<const uint8_t> record, uint32_t type,
                                        const Endian& e, uint64_t sample_type, bool sample_id_all) {
  if (record.size() < kRecordHeaderSize) return std::nullopt;
  const uint64_t words = (record.size() - kRecordHeaderSize) / 8;
  if (type == kSample) return sample_event_id(record, e, sample_id_position(sample_type));
  if (!has_sample_id_trailer(type) || !sample_id_all) return std::nullopt;
  const auto pos = trailer_id_position_from_end(sample_type);
  if (!pos || *pos > words) return std::nullopt;
  return e.u64(record.data() + record.size() - uint64_t{8} * *pos);
}

namespace {

// Where the trailer keeps the task (u32 pid, u32 tid) and the time (u64): byte offsets from its
// start, nullopt for a field it lacks.
struct TrailerLayout {
  std::optional<uint32_t> task;
  std::optional<uint32_t> time;
};

TrailerLayout trailer_layout(uint64_t sample_type) {
  TrailerLayout l;
  uint32_t at = 0;
  if (sample_type & kSampleTid) {
    l.task = at;
    at += 8;
  }
  if (sample_type & kSampleTime) l.time = at;
  return l;
}

}  // namespace

TrailerFields decode_trailer(std::span<const uint8_t> trailer, const Endian& e,
                             uint64_t sample_type) {
  const TrailerLayout l = trailer_layout(sample_type);
  TrailerFields f;
  if (l.task && *l.task + 8 <= trailer.size()) {
    f.pid = e.u32(trailer.data() + *l.task);
    f.tid = e.u32(trailer.data() + *l.task + 4);
  }
  if (l.time && *l.time + 8 <= trailer.size()) f.time = e.u64(trailer.data() + *l.time);
  return f;
}

void encode_trailer(std::span<uint8_t> trailer, const Endian& e, uint64_t sample_type,
                    const TrailerFields& f) {
  const TrailerLayout l = trailer_layout(sample_type);
  if (l.task && *l.task + 8 <= trailer.size()) {
    if (f.pid) e.put_u32(trailer.data() + *l.task, *f.pid);
    if (f.tid) e.put_u32(trailer.data() + *l.task + 4, *f.tid);
  }
  if (l.time && f.time && *l.time + 8 <= trailer.size()) {
    e.put_u64(trailer.data() + *l.time, *f.time);
  }
}

std::optional<uint32_t> stored_attr_size(std::span<const uint8_t> attr, const Endian& e) {
  if (attr.size() < kAttrSizeOffset + 4) return std::nullopt;
  return e.u32(attr.data() + kAttrSizeOffset);
}

void set_stored_attr_size(std::span<uint8_t> attr, const Endian& e, uint32_t size) {
  if (attr.size() >= kAttrSizeOffset + 4) e.put_u32(attr.data() + kAttrSizeOffset, size);
}

void set_attr_unwound(uint8_t* attr, uint32_t size, const Endian& e) {
  const uint64_t st = e.u64(attr + kAttrSampleTypeOffset);
  e.put_u64(attr + kAttrSampleTypeOffset,
            (st & ~(kSampleRegsUser | kSampleStackUser)) | kSampleCallchain);
  e.put_attr_flags(attr + kAttrFlagsOffset,
                   e.attr_flags(attr + kAttrFlagsOffset) & ~kAttrExcludeCallchainUser);
  if (size >= kAttrSampleStackUserOffset + 4) {
    e.put_u64(attr + kAttrSampleRegsUserOffset, 0);
    e.put_u32(attr + kAttrSampleStackUserOffset, 0);
  }
}

}  // namespace pdfix::format
