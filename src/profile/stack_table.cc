#include "profile/stack_table.h"

#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace pdfix::profile {

StackTable::StackTable(Hashing hashing)
    : data_(std::make_unique<Data>(Data{.hashing = hashing})),
      index_(0, Hash{data_.get()}, Eq{data_.get()}) {
  // A huge page each from the start (one page fault): growing through small pages to 2 MiB takes
  // a thousand, and a recording of some ten thousand distinct stacks gets that far.
  data_->words.reserve(io::kHugePage / sizeof(uint64_t));
  data_->entries.reserve(io::kHugePage / sizeof(Entry));
}

size_t StackTable::Hash::operator()(std::span<const uint64_t> key) const {
  if (data->hashing == Hashing::kFirstWord && !key.empty()) return key.front();
  return absl::Hash<absl::Span<const uint64_t>>{}(absl::MakeConstSpan(key.data(), key.size()));
}

StackTable::Counted StackTable::count(std::span<const uint64_t> key, uint64_t samples,
                                      uint64_t period) {
  Table<uint64_t>& words = data_->words;
  if (auto found = index_.find(key); found != index_.end()) {
    const uint64_t at = *found >> kSizeBits;
    words[at - 2] += samples;
    words[at - 1] += period;
    return {.index = static_cast<uint32_t>(words[at - kHeader]), .added = false, .place = *found};
  }
  const auto i = static_cast<uint32_t>(data_->entries.size());
  words.insert(words.end(), {i, samples, period});
  const uint64_t offset = words.size();
  data_->entries.push_back({.offset = offset, .size = key.size()});
  words.insert(words.end(), key.begin(), key.end());
  const Place place = slot_of(offset, key.size());
  index_.insert(place);
  return {.index = i, .added = true, .place = place};
}

}  // namespace pdfix::profile
