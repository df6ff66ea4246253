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

#include <algorithm>
#include <cstdint>
#include <optional>
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

// A queue in one array used as a ring: once the array has grown to what a pass holds at once, a
// held record costs no allocation of its own (a std::deque allocates a node for each record of
// this size).
template <typename V>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  V& operator[](size_t i) { return *slots_[(head_ + i) & (slots_.size() - 1)]; }
  V& front() { return (*this)[0]; }
  void push_back(V v) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)].emplace(std::move(v));
    ++size_;
  }
  V pop_front() {
    std::optional<V> slot;
    slot.swap(slots_[head_]);
    V v = *std::move(slot);
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
    return v;
  }
  // Keeps, in order, the items `keep` returns true for.
  template <typename F>
  void keep_if(F keep) {
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      std::optional<V>& slot = slots_[(head_ + i) & (slots_.size() - 1)];
      if (!keep(*slot)) {
        slot.reset();
        continue;
      }
      if (kept != i) slots_[(head_ + kept) & (slots_.size() - 1)].swap(slot);
      ++kept;
    }
    size_ = kept;
  }
  void clear() {
    for (size_t i = 0; i < size_; ++i) slots_[(head_ + i) & (slots_.size() - 1)].reset();
    head_ = size_ = 0;
  }

 private:
  void grow() {
    std::vector<std::optional<V>> bigger(std::max<size_t>(16, 2 * slots_.size()));
    for (size_t i = 0; i < size_; ++i) bigger[i].emplace(std::move((*this)[i]));
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<std::optional<V>> slots_;  // a power of two of them
  size_t head_ = 0;
  size_t size_ = 0;
};

template <typename T>
class LookAhead {
  struct Held {
    T item;
    uint64_t bytes = 0;
  };

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
  // Valid until the next hold().
  T& operator[](size_t i) { return held_[i].item; }
  T& front() { return held_.front().item; }

  T take_front() {
    Held h = held_.pop_front();
    bytes_.remove(h.bytes);
    return std::move(h.item);
  }
  std::vector<T> take_all() {
    std::vector<T> out;
    out.reserve(held_.size());
    while (!held_.empty()) out.push_back(held_.pop_front().item);
    bytes_.clear();
    return out;
  }
  // Visits the held items in order, letting go of those `keep` returns false for.
  template <typename F>
  void filter(F keep) {
    held_.keep_if([&](Held& h) {
      if (keep(h.item)) return true;
      bytes_.remove(h.bytes);
      return false;
    });
  }

 private:
  Ring<Held> held_;
  HeldBytes bytes_;
};

// The line a pass's summary gives a look-ahead flushed early `n` times; empty when it never was.
std::string early_flush_note(uint64_t n);

}  // namespace pdfix::transform
