// A record copied out of the input, for passes that hold records back beyond the life of the
// reader's view. A map keeps its decoded view, re-pointed at the copy.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "transform/record.h"

namespace pdfix::transform {

class OwnedRecord {
 public:
  explicit OwnedRecord(const RecordRef& r) : OwnedRecord(r, {}) {}
  // The copy made in `storage`, whose memory a pass reuses record after record (see storage()).
  OwnedRecord(const RecordRef& r, std::vector<uint8_t> storage)
      : bytes_(std::move(storage)), ref_(r) {
    bytes_.assign(r.bytes.begin(), r.bytes.end());
    if (r.map != nullptr) {
      map_ = *r.map;
      const auto at = static_cast<size_t>(r.map->fields.filename.data() -
                                          reinterpret_cast<const char*>(r.bytes.data()));
      map_->fields.filename = {reinterpret_cast<const char*>(bytes_.data()) + at,
                               r.map->fields.filename.size()};
    }
  }
  OwnedRecord(const OwnedRecord&) = delete;
  OwnedRecord& operator=(const OwnedRecord&) = delete;
  OwnedRecord(OwnedRecord&&) = default;
  OwnedRecord& operator=(OwnedRecord&&) = default;

  // The record, viewing the copy (valid while this object lives).
  RecordRef view() const {
    RecordRef v = ref_;
    v.bytes = bytes_;
    v.map = map_ ? &*map_ : nullptr;
    return v;
  }
  const Map* map() const { return map_ ? &*map_ : nullptr; }
  // The copy's memory, for the next record; this object is done with.
  std::vector<uint8_t> storage() && { return std::move(bytes_); }
  // For a pass that patches a map's length in place.
  void set_len(uint64_t len, const format::Endian& e) {
    e.put_u64(bytes_.data() + format::MmapRecord::kLenOffset, len);
    if (map_) map_->fields.len = len;
    ref_.original = false;
  }

 private:
  std::vector<uint8_t> bytes_;
  RecordRef ref_;
  std::optional<Map> map_;
};

}  // namespace pdfix::transform
