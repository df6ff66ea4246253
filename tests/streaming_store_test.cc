// Streaming stores (io/streaming_store.h) copy exactly the words asked, wherever the destination
// lies (8-byte aligned, not a whole line), and nothing beside them.
#include "io/streaming_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace pdfix::io {
namespace {

TEST(StreamingStore, CopiesTheWordsAskedAndNothingBeside) {
  std::vector<uint64_t> from(37);
  std::iota(from.begin(), from.end(), uint64_t{0x1000});
  for (const size_t at : {0, 1, 3, 8}) {
    for (const size_t words : {0, 1, 2, 7, 37}) {
      std::vector<uint64_t> to(64, 0xdead);
      stream_words(to.data() + at, from.data(), words);
      stream_fence();
      for (size_t i = 0; i < to.size(); ++i) {
        const bool copied = i >= at && i < at + words;
        EXPECT_EQ(to[i], copied ? from[i - at] : 0xdead) << at << " " << words << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace pdfix::io
