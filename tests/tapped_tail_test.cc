// What a tap is shown of a recording read from a file (transform/tail.h): each record's own bytes,
// also where a record lies across the end of one of the chunks the file is read in
// (io::MappedFile::chunk_at), which the tail then copies together from the two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "io/input.h"
#include "transform/pipeline.h"
#include "transform/tap.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

// The offset, and a copy of the bytes, of every SAMPLE a tap is shown.
class SampleBytes : public transform::RecordTap {
 public:
  struct Shown {
    uint64_t offset;
    Bytes bytes;
  };
  bool taps(uint32_t type) const override { return type == format::kSample; }
  absl::Status record(const transform::RecordRef& r, const transform::Session& /*s*/) override {
    shown.push_back({r.offset, Bytes(r.bytes.begin(), r.bytes.end())});
    return absl::OkStatus();
  }
  absl::Status end(const transform::Session& /*s*/,
                   const transform::FeatureEdits& /*edits*/) override {
    return absl::OkStatus();
  }
  std::vector<Shown> shown;
};

TEST(TappedTail, ARecordAcrossTwoChunksIsShownWhole) {
  // Callchains of 1 to 13 entries: records of many sizes, so that some of them lie across each
  // chunk's end, each with its own addresses (a record put together wrongly would not match).
  PerfDataBuilder b;
  b.attr({.sample_type = 0x127}).comm(1, 1, "x");
  constexpr size_t kSamples = 12000;  // about 100 bytes each: over four chunks
  for (uint64_t i = 0; i < kSamples; ++i) {
    std::vector<uint64_t> chain(1 + i % 13);
    for (size_t k = 0; k < chain.size(); ++k) chain[k] = 0x400000 + (i << 8) + k;
    b.sample_callchain(chain.front(), 1, 1, i, chain);
  }
  const Bytes file = b.build();
  ASSERT_GT(file.size(), 4 * io::MappedFile::kChunkSize);
  auto in = io::open_input(testing::write_temp(file));
  ASSERT_TRUE(in.ok()) << in.status();
  SampleBytes tap;
  ASSERT_TRUE(transform::run_into_tap(*in, nullptr, tap, {}).ok());

  ASSERT_EQ(tap.shown.size(), kSamples);
  size_t across = 0;
  for (const SampleBytes::Shown& s : tap.shown) {
    ASSERT_LE(s.offset + s.bytes.size(), file.size());
    EXPECT_TRUE(std::equal(s.bytes.begin(), s.bytes.end(), file.begin() + s.offset))
        << "the SAMPLE at offset " << s.offset;
    const uint64_t chunk_end =
        (s.offset / io::MappedFile::kChunkSize + 1) * io::MappedFile::kChunkSize;
    if (s.offset + s.bytes.size() > chunk_end) ++across;
  }
  EXPECT_GE(across, 3U);
}

}  // namespace
}  // namespace pdfix
