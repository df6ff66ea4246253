// A record copied out of the input, for passes that hold records back beyond the life of the
// reader's view.
#pragma once

#include <cstdint>
#include <vector>

#include "transform/session.h"

namespace pdfix::transform {

class OwnedRecord {
 public:
  explicit OwnedRecord(const RecordRef& r) : bytes_(r.bytes.begin(), r.bytes.end()), ref_(r) {}
  // The record, viewing the copy (valid while this object lives and is not changed).
  RecordRef view() const {
    RecordRef v = ref_;
    v.bytes = bytes_;
    return v;
  }
  std::vector<uint8_t>& bytes() { return bytes_; }
  // For a pass that patched the bytes in place.
  void mark_changed() { ref_.original = false; }

 private:
  std::vector<uint8_t> bytes_;
  RecordRef ref_;
};

}  // namespace pdfix::transform
