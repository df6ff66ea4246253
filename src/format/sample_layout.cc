#include "format/sample_layout.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "format/attr.h"
#include "format/error.h"

namespace pdfix::format {

SampleLayout::SampleLayout(uint64_t sample_type, uint64_t read_format)
    : sample_type_(sample_type), read_format_(read_format) {
  uint32_t pos = kRecordHeaderSize;
  // In perf's order; each field 8 bytes (TID and CPU two u32s).
  for (const auto& [bit, field] : {std::pair{kSampleIdentifier, &identifier_},
                                   {kSampleIp, &ip_},
                                   {kSampleTid, &tid_},
                                   {kSampleTime, &time_},
                                   {kSampleAddr, &addr_},
                                   {kSampleId, &id_},
                                   {kSampleStreamId, &stream_id_},
                                   {kSampleCpu, &cpu_},
                                   {kSamplePeriod, &period_}}) {
    if ((sample_type & bit) == 0) continue;
    *field = static_cast<uint8_t>(pos);
    pos += 8;
  }
  head_end_ = pos;
  constexpr uint64_t kEnabled = 1, kRunning = 2, kId = 4, kGroup = 8, kLost = 16;
  if ((sample_type & kSampleRead) == 0) {
    read_end_ = head_end_;
  } else if ((read_format & kGroup) == 0) {
    const uint32_t words = ((read_format & kEnabled) ? 1 : 0) + ((read_format & kRunning) ? 1 : 0) +
                           1 + ((read_format & kId) ? 1 : 0) + ((read_format & kLost) ? 1 : 0);
    read_end_ = head_end_ + 8 * words;
  }
}

absl::StatusOr<SampleHead> SampleLayout::head(std::span<const uint8_t> record, const Endian& e,
                                              uint64_t file_offset) const {
  if (record.size() < head_end_) {
    return malformed_at(file_offset, "SAMPLE record of ", record.size(),
                        " bytes is shorter than its sample_type 0x", absl::Hex(sample_type_),
                        " needs");
  }
  const uint8_t* p = record.data();
  SampleHead s;
  if (identifier_ != kAbsent) s.identifier = e.u64(p + identifier_);
  if (ip_ != kAbsent) s.ip = e.u64(p + ip_);
  if (tid_ != kAbsent) {
    s.pid = e.u32(p + tid_);
    s.tid = e.u32(p + tid_ + 4);
  }
  if (time_ != kAbsent) s.time = e.u64(p + time_);
  if (addr_ != kAbsent) s.addr = e.u64(p + addr_);
  if (id_ != kAbsent) s.id = e.u64(p + id_);
  if (stream_id_ != kAbsent) s.stream_id = e.u64(p + stream_id_);
  if (cpu_ != kAbsent) s.cpu = e.u32(p + cpu_);
  if (period_ != kAbsent) s.period = e.u64(p + period_);
  s.end = head_end_;
  return s;
}

absl::StatusOr<uint64_t> SampleLayout::callchain_at(std::span<const uint8_t> record,
                                                    const Endian& e, const SampleHead& head,
                                                    uint64_t file_offset) const {
  uint64_t pos = 0;
  if (read_end_) {
    pos = *read_end_;
    if (record.size() < pos) return malformed_at(file_offset, "SAMPLE ends in its READ");
  } else {
    auto end = sample_read_end(record, e, sample_type_, read_format_, head.end, file_offset);
    if (!end.ok()) return end.status();
    pos = *end;
  }
  if (record.size() < pos + 8) return malformed_at(file_offset, "SAMPLE ends before its callchain");
  const uint64_t nr = e.u64(record.data() + pos);
  if (nr > (record.size() - pos - 8) / 8) {
    return malformed_at(file_offset, "SAMPLE callchain of ", nr, " entries exceeds the record");
  }
  return pos;
}

absl::Status SampleLayout::callchain(std::span<const uint8_t> record, const Endian& e,
                                     const SampleHead& head, uint64_t file_offset,
                                     std::vector<uint64_t>& to) const {
  if ((sample_type_ & kSampleCallchain) == 0) return absl::OkStatus();
  auto at = callchain_at(record, e, head, file_offset);
  if (!at.ok()) return at.status();
  const uint64_t nr = e.u64(record.data() + *at);
  if (nr == 0) return absl::OkStatus();  // (memcpy into an empty vector's null data is undefined)
  const size_t old = to.size();
  to.resize(old + nr);
  const uint8_t* from = record.data() + *at + 8;
  if (!e.is_swapped()) {
    std::memcpy(to.data() + old, from, nr * 8);
  } else {
    for (uint64_t i = 0; i < nr; ++i) to[old + i] = e.u64(from + 8 * i);
  }
  return absl::OkStatus();
}

}  // namespace pdfix::format
