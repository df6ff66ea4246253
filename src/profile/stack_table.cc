#include "profile/stack_table.h"

#include "absl/hash/hash.h"
#include "absl/types/span.h"

namespace pdfix::profile {

StackTable::StackTable()
    : data_(std::make_unique<Data>()), index_(0, Hash{data_.get()}, Eq{data_.get()}) {
  // A huge page each from the start (one page fault): growing through small pages to 2 MiB takes
  // a thousand, and a recording of some ten thousand distinct stacks gets that far.
  data_->words.reserve(io::kHugePage / sizeof(uint64_t));
  data_->entries.reserve(io::kHugePage / sizeof(Entry));
}

size_t StackTable::Hash::operator()(std::span<const uint64_t> key) const {
  return absl::Hash<absl::Span<const uint64_t>>{}(absl::MakeConstSpan(key.data(), key.size()));
}

std::pair<uint32_t, bool> StackTable::intern(std::span<const uint64_t> key) {
  auto found = index_.find(key);
  if (found != index_.end()) return {*found, false};
  const auto i = static_cast<uint32_t>(data_->entries.size());
  data_->entries.push_back({.offset = data_->words.size(), .size = key.size()});
  data_->words.insert(data_->words.end(), key.begin(), key.end());
  index_.insert(i);
  return {i, true};
}

}  // namespace pdfix::profile
