// What a pass holds back to see the records after them: the module maps after the kernel's (to
// size and judge them together), samples waiting for their deferred callchain, a round's records
// waiting for their turn in time order. One mechanism for every pass, with one bound and one
// overflow rule:
//
// - The bound is on the bytes held: each record's copy and the holder's own entry, 256 MiB by
//   default, whatever sizes the records claim.
// - A hold that passes it makes the pass apply everything it holds at once, as though the records
//   ahead had ended there: the module maps are sized with the neighbours seen so far, the waiting
//   samples go on without the callchain that has not come, the round's records go in the time
//   order reached. perf does the same when its ordered-events queue outgrows its memory. Each such
//   early flush is counted, and the pass's summary says how many there were.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace pdfix::transform {

inline constexpr uint64_t kLookAheadBytes = uint64_t{256} << 20;

template <typename T>
class LookAhead {
  struct Held {
    T item;
    uint64_t bytes = 0;
  };
  using Items = std::deque<Held>;

 public:
  explicit LookAhead(uint64_t bound = kLookAheadBytes) : bound_(bound) {}

  // Holds `item`, which copies `bytes` bytes of the input. True when what is held now passes the
  // bound: the caller applies everything it holds, and calls flushed_early().
  bool hold(T item, uint64_t bytes) {
    bytes += sizeof(Held);
    held_.push_back({std::move(item), bytes});
    bytes_ += bytes;
    return bytes_ > bound_;
  }
  void flushed_early() { ++early_flushes_; }

  bool empty() const { return held_.empty(); }
  size_t size() const { return held_.size(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t early_flushes() const { return early_flushes_; }
  T& operator[](size_t i) { return held_[i].item; }
  T& front() { return held_.front().item; }

  T take_front() {
    Held h = std::move(held_.front());
    held_.pop_front();
    bytes_ -= h.bytes;
    return std::move(h.item);
  }
  std::vector<T> take_all() {
    std::vector<T> out;
    out.reserve(held_.size());
    for (Held& h : held_) out.push_back(std::move(h.item));
    held_.clear();
    bytes_ = 0;
    return out;
  }
  // Visits the held items in order, letting go of those `keep` returns false for.
  template <typename F>
  void filter(F keep) {
    for (auto it = held_.begin(); it != held_.end();) {
      if (keep(it->item)) {
        ++it;
      } else {
        bytes_ -= it->bytes;
        it = held_.erase(it);
      }
    }
  }

 private:
  uint64_t bound_;
  Items held_;
  uint64_t bytes_ = 0;
  uint64_t early_flushes_ = 0;
};

// The line a pass's summary gives a look-ahead flushed early `n` times; empty when it never was.
inline std::string early_flush_note(uint64_t n) {
  if (n == 0) return "";
  return "  " + std::to_string(n) + (n == 1 ? " time" : " times") +
         " the records held to look ahead passed their bound (256 MiB) and were applied without "
         "the records after them\n";
}

}  // namespace pdfix::transform
