// Where a SAMPLE's fields lie for one event: its sample_type (and read_format) put each field at
// the same offset in every sample of the event, so the offsets are worked out once, not field by
// field at each of a million samples (export decodes every sample's head and callchain).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "format/byte_order.h"
#include "format/records.h"

namespace pdfix::format {

class SampleLayout {
 public:
  SampleLayout(uint64_t sample_type, uint64_t read_format);

  // The leading fixed fields (decode_sample_head), an error naming `file_offset` when the record
  // is shorter than they are.
  absl::StatusOr<SampleHead> head(std::span<const uint8_t> record, const Endian& e,
                                  uint64_t file_offset) const;
  // Where the callchain (u64 nr, then nr ips) starts past `head`, this layout's head of the same
  // record, its count checked (sample_callchain_at); sample_type must have CALLCHAIN.
  absl::StatusOr<uint64_t> callchain_at(std::span<const uint8_t> record, const Endian& e,
                                        const SampleHead& head, uint64_t file_offset) const;
  // The callchain's entries appended to `to` (sample_callchain): none when sample_type has no
  // CALLCHAIN.
  absl::Status callchain(std::span<const uint8_t> record, const Endian& e, const SampleHead& head,
                         uint64_t file_offset, std::vector<uint64_t>& to) const;

 private:
  static constexpr uint8_t kAbsent = 0xff;

  uint64_t sample_type_;
  uint64_t read_format_;
  // Each head field's offset in the record, kAbsent when sample_type has none.
  uint8_t identifier_ = kAbsent;
  uint8_t ip_ = kAbsent;
  uint8_t tid_ = kAbsent;
  uint8_t time_ = kAbsent;
  uint8_t addr_ = kAbsent;
  uint8_t id_ = kAbsent;
  uint8_t stream_id_ = kAbsent;
  uint8_t cpu_ = kAbsent;
  uint8_t period_ = kAbsent;
  uint32_t head_end_ = 0;
  // Where READ's values end when their size is the same in every sample (no group: a group's
  // count comes in the sample); the head's end without READ.
  std::optional<uint32_t> read_end_;
};

}  // namespace pdfix::format
