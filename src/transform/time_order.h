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
#include <iterator>
#include <optional>
#include <span>
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
  // An item and the words it was added with.
  using Deliver = std::function<void(T&, std::span<const uint64_t>)>;
  explicit TimeOrder(Deliver deliver, uint64_t bound = kLookAheadBytes)
      : deliver_(std::move(deliver)), held_(bound) {}

  // An item without a time is delivered at once, as perf does. `words`: what the item carries
  // beyond itself (a sample's callchain), held in one array for all items rather than a
  // vector each.
  void add(std::optional<uint64_t> time, T item, std::span<const uint64_t> words = {}) {
    if (!time) {
      deliver_(item, words);
      return;
    }
    max_ = std::max(max_, *time);
    const uint64_t bytes = sizeof(Key) + sizeof(T) + words.size_bytes();
    keys_.push_back({*time, seq_++, items_.size(), bytes});
    items_.push_back({std::move(item), words_.size(), words.size()});
    words_.insert(words_.end(), words.begin(), words.end());
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
  size_t waiting() const { return keys_.size(); }
  uint64_t early_flushes() const { return held_.early_flushes(); }

 private:
  // The sort moves keys, not items: a round sorts thousands.
  struct Key {
    uint64_t time;
    uint64_t seq;  // arrival: equal times keep file order
    size_t item;   // in items_
    uint64_t bytes;
  };
  struct Item {
    T value;
    size_t first_word;  // in words_
    size_t words;
  };
  static bool before(const Key& a, const Key& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  // Each CPU's records come in time order, so the keys are a few sorted runs (what waits from the
  // round before, then a run a buffer): merged, not sorted anew. Many runs (records in no order)
  // are sorted.
  void sort_keys() {
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
  void deliver_up_to(uint64_t limit) {
    sort_keys();
    size_t n = 0;
    for (; n < keys_.size() && keys_[n].time <= limit; ++n) {
      held_.remove(keys_[n].bytes);
      Item& item = items_[keys_[n].item];
      deliver_(item.value, std::span(words_).subspan(item.first_word, item.words));
    }
    keys_.erase(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(n));
    // What waits for a later round moves to the spare arrays; all keep their capacity from round
    // to round, so that a long recording allocates only while its rounds grow.
    for (Key& k : keys_) {
      Item& item = items_[k.item];
      const auto from = words_.begin() + static_cast<std::ptrdiff_t>(item.first_word);
      spare_items_.push_back({std::move(item.value), spare_words_.size(), item.words});
      spare_words_.insert(spare_words_.end(), from, from + static_cast<std::ptrdiff_t>(item.words));
      k.item = spare_items_.size() - 1;
    }
    items_.swap(spare_items_);
    words_.swap(spare_words_);
    spare_items_.clear();
    spare_words_.clear();
  }

  static constexpr size_t kMaxRuns = 64;

  Deliver deliver_;
  std::vector<Key> keys_;
  std::vector<size_t> runs_;  // where each sorted run of keys_ begins
  std::vector<Key> spare_keys_;
  std::vector<Item> items_;
  std::vector<uint64_t> words_;
  std::vector<Item> spare_items_;
  std::vector<uint64_t> spare_words_;
  HeldBytes held_;
  uint64_t seq_ = 0;
  uint64_t max_ = 0;
  uint64_t next_flush_ = 0;
};

}  // namespace pdfix::transform
