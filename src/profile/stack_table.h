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
  StackTable();
  // The index of the stack `key` (in the order first seen), and whether it is new.
  std::pair<uint32_t, bool> intern(std::span<const uint64_t> key);
  // The totals of the stack `key`, added (zero) when new.
  Totals& add(std::span<const uint64_t> key) { return totals(intern(key).first); }
  size_t size() const { return data_->entries.size(); }
  // All the stacks' words, for a bound on what the table holds.
  size_t words() const { return data_->words.size(); }
  // The stacks in the order first seen.
  std::span<const uint64_t> key(size_t i) const { return data_->key(static_cast<uint32_t>(i)); }
  const Totals& totals(size_t i) const {
    static constexpr Totals kNone;
    return i < totals_.size() ? totals_[i] : kNone;
  }
  // Held apart from the keys: a table used only to intern (a cache of stacks) keeps none.
  Totals& totals(size_t i) {
    if (i >= totals_.size()) totals_.resize(data_->entries.size());
    return totals_[i];
  }

 private:
  struct Entry {
    uint64_t offset = 0;  // in words
    uint64_t size = 0;
  };
  // Behind a pointer: the set's hasher holds it, and a table is moved.
  template <typename T>
  using Table = std::vector<T, io::HugePageAllocator<T>>;
  struct Data {
    Table<uint64_t> words;
    Table<Entry> entries;
    std::span<const uint64_t> key(uint32_t i) const {
      return std::span(words).subspan(entries[i].offset, entries[i].size);
    }
  };
  struct Hash {
    using is_transparent = void;
    const Data* data;
    size_t operator()(std::span<const uint64_t> key) const;
    size_t operator()(uint32_t i) const { return (*this)(data->key(i)); }
  };
  struct Eq {
    using is_transparent = void;
    const Data* data;
    static std::span<const uint64_t> of(const Data* /*d*/, std::span<const uint64_t> key) {
      return key;
    }
    static std::span<const uint64_t> of(const Data* d, uint32_t i) { return d->key(i); }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const auto x = of(data, a);
      const auto y = of(data, b);
      return std::equal(x.begin(), x.end(), y.begin(), y.end());
    }
  };
  std::unique_ptr<Data> data_;
  Table<Totals> totals_;
  absl::flat_hash_set<uint32_t, Hash, Eq, io::HugePageAllocator<uint32_t>> index_;
};

}  // namespace pdfix::profile
