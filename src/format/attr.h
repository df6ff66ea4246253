// perf_event_attr as stored in perf.data, and the layout rules derived from it: where a record's
// sample id sits and how long its sample_id trailer is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/byte_order.h"
#include "format/record_type.h"

namespace pdfix::format {

inline constexpr uint32_t kAttrSizeVer0 = 64;
// Where the fields an unwinding rewrite changes sit in perf_event_attr.
inline constexpr uint32_t kAttrSizeOffset = 4;
inline constexpr uint32_t kAttrSampleTypeOffset = 24;
inline constexpr uint32_t kAttrFlagsOffset = 40;
inline constexpr uint32_t kAttrBranchSampleTypeOffset = 72;
inline constexpr uint32_t kAttrSampleRegsUserOffset = 80;
inline constexpr uint32_t kAttrSampleStackUserOffset = 88;
inline constexpr uint32_t kAttrClockidOffset = 92;

enum SampleType : uint64_t {
  kSampleIp = 1ULL << 0,
  kSampleTid = 1ULL << 1,
  kSampleTime = 1ULL << 2,
  kSampleAddr = 1ULL << 3,
  kSampleRead = 1ULL << 4,
  kSampleCallchain = 1ULL << 5,
  kSampleId = 1ULL << 6,
  kSampleCpu = 1ULL << 7,
  kSamplePeriod = 1ULL << 8,
  kSampleStreamId = 1ULL << 9,
  kSampleRaw = 1ULL << 10,
  kSampleBranchStack = 1ULL << 11,
  kSampleRegsUser = 1ULL << 12,
  kSampleStackUser = 1ULL << 13,
  kSampleIdentifier = 1ULL << 16,
};

// An attr's clockid (perf record -k) is a clockid_t of the recording's kernel's uapi.
inline constexpr int32_t kClockMonotonic = 1;

enum AttrFlag : uint64_t {
  kAttrFreq = 1ULL << 10,
  kAttrSampleIdAll = 1ULL << 18,
  kAttrExcludeCallchainUser = 1ULL << 22,
  kAttrMmap2 = 1ULL << 23,
  kAttrUseClockid = 1ULL << 25,
  kAttrBuildId = 1ULL << 34,
};

struct EventAttr {
  uint32_t type = 0;
  uint32_t size = 0;  // as stored; 0 in very old files means 64
  uint64_t config = 0;
  uint64_t sample_period = 0;
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t flags = 0;
  // Zero where the attr is too old to have them (80 and 96 bytes are their sizes).
  uint64_t branch_sample_type = 0;
  uint64_t sample_regs_user = 0;
  uint32_t sample_stack_user = 0;
  int32_t clockid = 0;  // perf record -k: the clock of every time, when use_clockid is set
  std::vector<uint64_t> ids;

  bool sample_id_all() const { return (flags & kAttrSampleIdAll) != 0; }
  // Bytes the sample_id trailer adds to each non-SAMPLE kernel record of this event.
  uint32_t trailer_size() const;
  // The sample_type bits that shape the trailer (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER).
  uint64_t trailer_fields() const;
  // perf's name for the event when no EVENT_DESC gives one: "cycles", "cpu-clock", "raw 0x1234".
  std::string default_name() const;
  // perf's dummy event (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY): it carries the side-band
  // records (maps, comms, forks) and samples nothing worth counting.
  bool is_dummy() const { return type == kPerfTypeSoftware && config == kSwDummy; }
  // cpu-clock and task-clock: their period is time, in nanoseconds.
  bool counts_time() const {
    return type == kPerfTypeSoftware && (config == kSwCpuClock || config == kSwTaskClock);
  }

  static constexpr uint32_t kPerfTypeSoftware = 1;
  static constexpr uint64_t kSwCpuClock = 0;
  static constexpr uint64_t kSwTaskClock = 1;
  static constexpr uint64_t kSwDummy = 9;
};

// Decodes an attr whose bytes start at `p`, `available` bytes long. `file_offset` is for errors.
absl::StatusOr<EventAttr> parse_attr(const uint8_t* p, uint64_t available, const Endian& e,
                                     uint64_t file_offset);

// A HEADER_ATTR record (a stream's attr): the attr, then the ids of its events to the record's end.
absl::StatusOr<EventAttr> decode_attr_record(std::span<const uint8_t> record, const Endian& e,
                                             uint64_t file_offset);

// Where the event id sits, in u64 words: in a SAMPLE counted from the start of its body, in other
// kernel records counted back from the end. nullopt when the sample_type has no id.
std::optional<uint32_t> sample_id_position(uint64_t sample_type);
std::optional<uint32_t> trailer_id_position_from_end(uint64_t sample_type);
// The event id a record of `type` carries where `sample_type` and `sample_id_all` put it: in a
// SAMPLE's body, or in another kernel record's trailer; nullopt where it has none, or the record
// is too short to hold it.
std::optional<uint64_t> record_event_id(std::span<const uint8_t> record, uint32_t type,
                                        const Endian& e, uint64_t sample_type, bool sample_id_all);
// A SAMPLE's event id at `position` (sample_id_position, which a reader of a million samples
// works out once): nullopt without one, or where the record is too short to hold it.
inline std::optional<uint64_t> sample_event_id(std::span<const uint8_t> record, const Endian& e,
                                               std::optional<uint32_t> position) {
  if (!position || record.size() < kRecordHeaderSize + uint64_t{8} * (*position + 1)) {
    return std::nullopt;
  }
  return e.u64(record.data() + kRecordHeaderSize + uint64_t{8} * *position);
}

// The task and time of a record's sample_id trailer (`trailer`, as long as the attr lays it
// out), where `sample_type` has them.
struct TrailerFields {
  std::optional<uint32_t> pid;
  std::optional<uint32_t> tid;
  std::optional<uint64_t> time;
};
TrailerFields decode_trailer(std::span<const uint8_t> trailer, const Endian& e,
                             uint64_t sample_type);
// Writes each field `f` has and the trailer holds; the rest of it is left as it was.
void encode_trailer(std::span<uint8_t> trailer, const Endian& e, uint64_t sample_type,
                    const TrailerFields& f);

// The size an attr says it is (its field at byte 4; 0 from perf before the field was used), and
// that field rewritten. nullopt: too short to hold it.
std::optional<uint32_t> stored_attr_size(std::span<const uint8_t> attr, const Endian& e);
void set_stored_attr_size(std::span<uint8_t> attr, const Endian& e, uint32_t size);

// Rewrites the attr at `attr` (`size` bytes of it) as it is once its samples' user stacks are
// unwound into their callchains: CALLCHAIN on, REGS_USER and STACK_USER off (their sizes zero),
// user callchains no longer excluded.
void set_attr_unwound(uint8_t* attr, uint32_t size, const Endian& e);

}  // namespace pdfix::format
