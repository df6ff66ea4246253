// A profile's distinct stacks and their totals: every stack's words (its key) back to back in one
// array, found again through a hash set of indices, in the order first seen. A recording of a
// million samples has hundreds of thousands of distinct stacks (a stack is its exact addresses,
// as pprof counts them): one allocation each would be most of export's memory and time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "io/huge_pages.h"

namespace pdfix::profile {

struct Totals {
  uint64_t samples = 0;
  uint64_t period = 0;
};

class StackTable {
 public:
  // How a key is hashed: all its words, or (kFirstWord) its first, which the caller made the
  // hash of the rest (absl::HashOf), where that is cheaper to have than hashing a key each time.
  enum class Hashing : uint8_t { kWords, kFirstWord };
  explicit StackTable(Hashing hashing = Hashing::kWords);
  // Where a stack's words lie in the table (never 0): a caller that keeps it looks at the stack
  // again without the index or the entries, each a cache miss (a thread's last stack, compared
  // at every sample of the thread).
  using Place = uint64_t;
  struct Counted {
    uint32_t index = 0;  // in the order first seen
    bool added = false;  // whether the stack is new
    Place place = 0;
  };
  // The index of the stack `key`, and whether it is new.
  std::pair<uint32_t, bool> intern(std::span<const uint64_t> key) {
    const Counted c = count(key, 0, 0);
    return {c.index, c.added};
  }
  // intern(), and `samples` and `period` added to the stack's totals in the same lookup.
  Counted count(std::span<const uint64_t> key, uint64_t samples, uint64_t period);
  // `t` added to the totals of the stack `i`.
  void add(size_t i, const Totals& t) { add_at(data_->entries[i].offset << kSizeBits, t); }
  // The same, of the stack at `place`, and its key.
  void add_at(Place place, const Totals& t) {
    const uint64_t at = place >> kSizeBits;
    data_->words[at - 2] += t.samples;
    data_->words[at - 1] += t.period;
  }
  std::span<const uint64_t> key_at(Place place) const { return data_->at(place); }
  size_t size() const { return data_->entries.size(); }
  // All the stacks' words, for a bound on what the table holds.
  size_t words() const { return data_->words.size(); }
  // The stacks in the order first seen.
  std::span<const uint64_t> key(size_t i) const { return data_->key(static_cast<uint32_t>(i)); }
  Totals totals(size_t i) const {
    const uint64_t at = data_->entries[i].offset;
    return {.samples = data_->words[at - 2], .period = data_->words[at - 1]};
  }

 private:
  struct Entry {
    uint64_t offset = 0;  // in words
    uint64_t size = 0;
  };
  // The index's slots hold where a key's words lie (kSizeBits of size, the offset above them),
  // and the kHeader words before them its index in the order first seen and its totals: a
  // lookup that counts reads the slot and then the words it compares, no Entry or Totals apart
  // (each a cache miss a sample, most of counting's time, when they were).
  static constexpr uint64_t kHeader = 3;  // index, samples, period
  static constexpr int kSizeBits = 24;    // a key is a record's words and a few more: < 16 M
  static uint64_t slot_of(uint64_t offset, uint64_t size) { return offset << kSizeBits | size; }
  // Behind a pointer: the set's hasher holds it, and a table is moved.
  template <typename T>
  using Table = std::vector<T, io::HugePageAllocator<T>>;
  struct Data {
    Hashing hashing = Hashing::kWords;
    Table<uint64_t> words;
    Table<Entry> entries;
    std::span<const uint64_t> key(uint32_t i) const {
      return std::span(words).subspan(entries[i].offset, entries[i].size);
    }
    std::span<const uint64_t> at(uint64_t slot) const {
      return std::span(words).subspan(slot >> kSizeBits, slot & ((uint64_t{1} << kSizeBits) - 1));
    }
  };
  struct Hash {
    using is_transparent = void;
    const Data* data;
    size_t operator()(std::span<const uint64_t> key) const;
    size_t operator()(uint64_t slot) const { return (*this)(data->at(slot)); }
  };
  struct Eq {
    using is_transparent = void;
    const Data* data;
    static std::span<const uint64_t> of(const Data* /*d*/, std::span<const uint64_t> key) {
      return key;
    }
    static std::span<const uint64_t> of(const Data* d, uint64_t slot) { return d->at(slot); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const auto x = of(data, a);
      const auto y = of(data, b);
      return std::equal(x.begin(), x.end(), y.begin(), y.end());
    }
  };
  std::unique_ptr<Data> data_;
  absl::flat_hash_set<uint64_t, Hash, Eq, io::HugePageAllocator<uint64_t>> index_;
};

}  // namespace pdfix::profile
