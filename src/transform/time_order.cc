#include "transform/time_order.h"

#include "format/attr.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::transform {

std::optional<uint64_t> record_time(const RecordRef& r, const Session& s) {
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr || (attr->sample_type & format::kSampleTime) == 0) return std::nullopt;
  if (r.header.type == format::kSample) {
    auto head = format::decode_sample_head(r.bytes, s.endian(), attr->sample_type, r.offset);
    if (!head.ok()) return std::nullopt;
    return head->time;
  }
  const uint32_t size = s.trailer_size(r);
  if (size == 0 || size > r.bytes.size()) return std::nullopt;
  return format::decode_trailer(r.bytes.last(size), s.endian(), attr->sample_type).time;
}

bool ends_round(uint32_t type) {
  return type == format::kFinishedRound || type == format::kFinishedInit;
}

}  // namespace pdfix::transform
