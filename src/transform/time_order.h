// Records in the order perf applies them. Each CPU's buffer is flushed on its own, so the file
// holds a child's exec and samples before the FORK that made it, now and then; perf's ordered
// events sort what has a timestamp and, at each FINISHED_ROUND, deliver everything up to the
// highest time of the round before (what no later buffer can still undercut), and all of it at
// the end. Whatever follows a process's maps (hit counts, unwinding) takes its records through
// this one queue, so that every verb attributes a sample to the same maps. What it holds is
// bounded as every look-ahead is (transform/look_ahead.h): past the bound, everything held is
// delivered in the time order reached, and the early flush counted.
#pragma once

#include <cstdint>
#include <functional>
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

// What the queue does whatever it holds: the items' times, arrival and words, their order, the
// bound. Not a template, so that it is compiled once (and a mutant of scripts/mutants.list
// rebuilds one unit). Held items are numbered in the order they were taken.
class TimeOrderIndex {
 public:
  explicit TimeOrderIndex(uint64_t bound) : held_(bound) {}

  enum class Take {
    kNow,        // no time: delivered at once, as perf does
    kHeld,       // waits for its round
    kPastBound,  // waits, and what is held has passed the bound: everything is to go now
  };
  // `item_bytes`: what the caller holds for the item beside its words.
  Take take(std::optional<uint64_t> time, uint64_t item_bytes, std::span<const uint64_t> words);
  // The limit of the round that ends now: the highest time of the round before.
  uint64_t end_round();

  struct Due {
    size_t item;
    std::span<const uint64_t> words;
  };
  // The held items with times up to `limit`, in time then arrival order.
  std::span<const Due> due(uint64_t limit);
  // After the due items were delivered: they are dropped, and what waits is numbered anew in its
  // time order; for each new number, the item's number before.
  std::span<const size_t> renumber_waiting();

  size_t waiting() const { return keys_.size(); }
  uint64_t early_flushes() const { return held_.early_flushes(); }

 private:
  // The sort moves keys, not items: a round sorts thousands.
  struct Key {
    uint64_t time;
    uint64_t seq;  // arrival: equal times keep file order
    size_t item;
    uint64_t bytes;
  };
  struct Place {
    size_t first_word;  // in words_
    size_t words;
  };
  static bool before(const Key& a, const Key& b) {
    return a.time != b.time ? a.time < b.time : a.seq < b.seq;
  }
  void sort_keys();

  static constexpr size_t kMaxRuns = 64;

  std::vector<Key> keys_;
  std::vector<size_t> runs_;  // where each sorted run of keys_ begins
  std::vector<Key> spare_keys_;
  std::vector<Place> places_;  // by item
  std::vector<uint64_t> words_;
  std::vector<Place> spare_places_;
  std::vector<uint64_t> spare_words_;
  std::vector<Due> due_;
  std::vector<size_t> renumbered_;
  HeldBytes held_;
  uint64_t seq_ = 0;
  uint64_t max_ = 0;
  uint64_t next_flush_ = 0;
};

template <typename T>
class TimeOrder {
 public:
  // An item and the words it was added with.
  using Deliver = std::function<void(T&, std::span<const uint64_t>)>;
  explicit TimeOrder(Deliver deliver, uint64_t bound = kLookAheadBytes)
      : deliver_(std::move(deliver)), index_(bound) {}

  // An item without a time is delivered at once, as perf does. `words`: what the item carries
  // beyond itself (a sample's callchain), held in one array for all items rather than a
  // vector each.
  void add(std::optional<uint64_t> time, T item, std::span<const uint64_t> words = {}) {
    const TimeOrderIndex::Take take = index_.take(time, sizeof(T), words);
    if (take == TimeOrderIndex::Take::kNow) {
      deliver_(item, words);
      return;
    }
    items_.push_back(std::move(item));
    if (take == TimeOrderIndex::Take::kPastBound) deliver_up_to(UINT64_MAX);
  }
  void round() { deliver_up_to(index_.end_round()); }
  void finish() { deliver_up_to(UINT64_MAX); }
  size_t waiting() const { return index_.waiting(); }
  uint64_t early_flushes() const { return index_.early_flushes(); }

 private:
  void deliver_up_to(uint64_t limit) {
    for (const TimeOrderIndex::Due& d : index_.due(limit)) deliver_(items_[d.item], d.words);
    // What waits moves to the spare array; both keep their capacity from round to round, so that
    // a long recording allocates only while its rounds grow.
    for (const size_t before : index_.renumber_waiting()) {
      spare_items_.push_back(std::move(items_[before]));
    }
    items_.swap(spare_items_);
    spare_items_.clear();
  }

  Deliver deliver_;
  TimeOrderIndex index_;
  std::vector<T> items_;
  std::vector<T> spare_items_;
};

}  // namespace pdfix::transform
