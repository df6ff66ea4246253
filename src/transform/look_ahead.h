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

// The byte accounting of a look-ahead, whatever it holds: the one bound and the count of early
// flushes.
class HeldBytes {
 public:
  explicit HeldBytes(uint64_t bound) : bound_(bound) {}
  // True when what is held now passes the bound.
  bool add(uint64_t bytes);
  void remove(uint64_t bytes) { bytes_ -= bytes; }
  void clear() { bytes_ = 0; }
  uint64_t bytes() const { return bytes_; }
  void flushed_early() { ++early_flushes_; }
  uint64_t early_flushes() const { return early_flushes_; }

 private:
  uint64_t bound_;
  uint64_t bytes_ = 0;
  uint64_t early_flushes_ = 0;
};

template <typename T>
class LookAhead {
  struct Held {
    T item;
    uint64_t bytes = 0;
  };
  using Items = std::deque<Held>;

 public:
  explicit LookAhead(uint64_t bound = kLookAheadBytes) : bytes_(bound) {}

  // Holds `item`, which copies `bytes` bytes of the input. True when what is held now passes the
  // bound: the caller applies everything it holds, and calls flushed_early().
  bool hold(T item, uint64_t bytes) {
    bytes += sizeof(Held);
    held_.push_back({std::move(item), bytes});
    return bytes_.add(bytes);
  }
  void flushed_early() { bytes_.flushed_early(); }

  bool empty() const { return held_.empty(); }
  size_t size() const { return held_.size(); }
  uint64_t bytes() const { return bytes_.bytes(); }
  uint64_t early_flushes() const { return bytes_.early_flushes(); }
  T& operator[](size_t i) { return held_[i].item; }
  T& front() { return held_.front().item; }

  T take_front() {
    Held h = std::move(held_.front());
    held_.pop_front();
    bytes_.remove(h.bytes);
    return std::move(h.item);
  }
  std::vector<T> take_all() {
    std::vector<T> out;
    out.reserve(held_.size());
    for (Held& h : held_) out.push_back(std::move(h.item));
    held_.clear();
    bytes_.clear();
    return out;
  }
  // Visits the held items in order, letting go of those `keep` returns false for.
  template <typename F>
  void filter(F keep) {
    for (auto it = held_.begin(); it != held_.end();) {
      if (keep(it->item)) {
        ++it;
      } else {
        bytes_.remove(it->bytes);
        it = held_.erase(it);
      }
    }
  }

 private:
  Items held_;
  HeldBytes bytes_;
};

// The line a pass's summary gives a look-ahead flushed early `n` times; empty when it never was.
std::string early_flush_note(uint64_t n);

}  // namespace pdfix::transform
