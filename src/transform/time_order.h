// Records in the order perf applies them. Each CPU's buffer is flushed on its own, so the file
// holds a child's exec and samples before the FORK that made it, now and then; perf's ordered
// events sort what has a timestamp and, at each FINISHED_ROUND, deliver everything up to the
// highest time of the round before (what no later buffer can still undercut), and all of it at
// the end. Whatever follows a process's maps (hit counts, unwinding) takes its records through
// this one queue, so that every verb attributes a sample to the same maps. What it holds is
// bounded as every look-ahead is (transform/look_ahead.h): past the bound, everything held is
// delivered in the time order reached, and the early flush counted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "transform/look_ahead.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::transform {

// The time a record carries: a sample's TIME field, or the TIME of another record's sample_id
// trailer. nullopt when its event records no time (then perf applies it as it comes).
std::optional<uint64_t> record_time(const RecordRef& r, const Session& s);

// Whether the record ends a round of perf's ordered events (FINISHED_ROUND, FINISHED_INIT).
bool ends_round(uint32_t type);

template <typename T>
class TimeOrder {
 public:
  using Deliver = std::function<void(T&)>;
  explicit TimeOrder(Deliver deliver, uint64_t bound = kLookAheadBytes)
      : deliver_(std::move(deliver)), held_(bound) {}

  // An item without a time is delivered at once, as perf does. `bytes`: what the item holds
  // beyond its own size (a sample's callchain).
  void add(std::optional<uint64_t> time, T item, uint64_t bytes = 0) {
    if (!time) {
      deliver_(item);
      return;
    }
    max_ = std::max(max_, *time);
    bytes += sizeof(Entry);
    queue_.push_back({*time, seq_++, bytes, std::move(item)});
    if (held_.add(bytes)) {
      held_.flushed_early();
      deliver_up_to(UINT64_MAX);
    }
  }
  void round() {
    deliver_up_to(next_flush_);
    next_flush_ = max_;
  }
  void finish() { deliver_up_to(UINT64_MAX); }
  size_t waiting() const { return queue_.size(); }
  uint64_t early_flushes() const { return held_.early_flushes(); }

 private:
  struct Entry {
    uint64_t time;
    uint64_t seq;  // arrival: equal times keep file order
    uint64_t bytes;
    T item;
  };
  void deliver_up_to(uint64_t limit) {
    std::sort(queue_.begin(), queue_.end(), [](const Entry& a, const Entry& b) {
      return a.time != b.time ? a.time < b.time : a.seq < b.seq;
    });
    size_t n = 0;
    for (; n < queue_.size() && queue_[n].time <= limit; ++n) {
      held_.remove(queue_[n].bytes);
      deliver_(queue_[n].item);
    }
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  Deliver deliver_;
  std::vector<Entry> queue_;
  HeldBytes held_;
  uint64_t seq_ = 0;
  uint64_t max_ = 0;
  uint64_t next_flush_ = 0;
};

}  // namespace pdfix::transform
