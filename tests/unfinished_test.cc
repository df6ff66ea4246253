// format/unfinished.h: what a file perf record never ended is read as.
#include "format/unfinished.h"

#include <gtest/gtest.h>

#include "fixture/perf_data_builder.h"
#include "format/file_header.h"
#include "format/records.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

// perf record killed before it ended the file: the header still says data size 0, the feature
// sections were never written (the bitmap says which were meant), the last record may be cut.
TEST(Unfinished, WholeRecordsAreKeptAndWhatTheKillCutIsNot) {
  const Bytes finished =
      PerfDataBuilder().attr({}).comm(1, 1, "a").comm(2, 2, "bb").string_feature(3, "h").build();
  auto h = format::parse_file_header(finished);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE(format::unfinished(finished, *h));
  const format::Endian e = h->endian;
  const uint64_t first = format::read_record_header(e, finished.data() + h->data.offset).size;
  const uint64_t second =
      format::read_record_header(e, finished.data() + h->data.offset + first).size;
  ASSERT_EQ(h->data.size, first + second);
  ASSERT_GT(second, 12u);
  for (const uint64_t kept : {uint64_t{5}, uint64_t{12}, uint64_t{0}}) {
    // Cut into the second record's header, or past it (the header says more than is there), or
    // at its start with a zeroed page after it.
    Bytes killed(finished.begin(),
                 finished.begin() + static_cast<ptrdiff_t>(h->data.offset + first + kept));
    if (kept == 0) killed.resize(killed.size() + 4096, 0);
    std::fill(killed.begin() + 48, killed.begin() + 56, 0);  // data.size
    auto k = format::parse_file_header(killed);
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_TRUE(format::unfinished(killed, *k));
    const format::FileHeader s = format::salvaged(killed, *k);
    EXPECT_TRUE(s.unfinished);
    EXPECT_EQ(s.data.offset, h->data.offset);
    EXPECT_EQ(s.data.size, first);
    EXPECT_EQ(s.cut, kept == 0 ? 4096 : kept);
    EXPECT_FALSE(s.features.any());
    EXPECT_NE(format::unfinished_note(s.cut).find("perf record was killed"), std::string::npos);
  }
}

}  // namespace
}  // namespace pdfix
