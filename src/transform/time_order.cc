#include "transform/time_order.h"

#include <algorithm>
#include <iterator>

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

TimeOrderIndex::Take TimeOrderIndex::take(std::optional<uint64_t> time, uint64_t item_bytes,
                                          std::span<const uint64_t> words) {
  if (!time) return Take::kNow;
  max_ = std::max(max_, *time);
  const uint64_t bytes = sizeof(Key) + sizeof(Place) + item_bytes + words.size_bytes();
  keys_.push_back({*time, seq_++, places_.size(), bytes});
  places_.push_back({words_.size(), words.size()});
  words_.insert(words_.end(), words.begin(), words.end());
  if (held_.add(bytes)) {
    held_.flushed_early();
    return Take::kPastBound;
  }
  return Take::kHeld;
}

uint64_t TimeOrderIndex::end_round() {
  const uint64_t limit = next_flush_;
  next_flush_ = max_;
  return limit;
}

// Each CPU's records come in time order, so the keys are a few sorted runs (what waits from the
// round before, then a run a buffer): merged, not sorted anew. Many runs (records in no order) are
// sorted.
void TimeOrderIndex::sort_keys() {
  runs_.clear();
  runs_.push_back(0);
  for (size_t i = 1; i < keys_.size(); ++i) {
    if (before(keys_[i], keys_[i - 1])) runs_.push_back(i);
  }
  if (runs_.size() > kMaxRuns) {
    std::sort(keys_.begin(), keys_.end(), before);
    return;
  }
  runs_.push_back(keys_.size());
  // Pairs of runs merged into the spare array, until one is left.
  while (runs_.size() > 2) {
    spare_keys_.clear();
    size_t kept = 1;
    const auto at = [&](size_t i) { return keys_.begin() + static_cast<std::ptrdiff_t>(i); };
    for (size_t r = 2; r < runs_.size(); r += 2) {
      std::merge(at(runs_[r - 2]), at(runs_[r - 1]), at(runs_[r - 1]), at(runs_[r]),
                 std::back_inserter(spare_keys_), before);
      runs_[kept++] = spare_keys_.size();
    }
    if (runs_.size() % 2 == 0) {
      spare_keys_.insert(spare_keys_.end(), at(runs_[runs_.size() - 2]), keys_.end());
      runs_[kept++] = spare_keys_.size();
    }
    runs_.resize(kept);
    keys_.swap(spare_keys_);
  }
}

std::span<const TimeOrderIndex::Due> TimeOrderIndex::due(uint64_t limit) {
  sort_keys();
  due_.clear();
  for (size_t n = 0; n < keys_.size() && keys_[n].time <= limit; ++n) {
    held_.remove(keys_[n].bytes);
    const Place& p = places_[keys_[n].item];
    due_.push_back({keys_[n].item, std::span(words_).subspan(p.first_word, p.words)});
  }
  return due_;
}

std::span<const size_t> TimeOrderIndex::renumber_waiting() {
  keys_.erase(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(due_.size()));
  due_.clear();
  renumbered_.clear();
  // What waits for a later round moves to the spare arrays, which keep their capacity.
  for (Key& k : keys_) {
    const Place& p = places_[k.item];
    const auto from = words_.begin() + static_cast<std::ptrdiff_t>(p.first_word);
    renumbered_.push_back(k.item);
    spare_places_.push_back({spare_words_.size(), p.words});
    spare_words_.insert(spare_words_.end(), from, from + static_cast<std::ptrdiff_t>(p.words));
    k.item = spare_places_.size() - 1;
  }
  places_.swap(spare_places_);
  words_.swap(spare_words_);
  spare_places_.clear();
  spare_words_.clear();
  return renumbered_;
}

}  // namespace pdfix::transform
