// The pipeline's analysis step (transform/analysis.h): what a chain must know of the whole
// recording is read before any pass meets a record, and a stream, which is read once, has none.
#include "transform/analysis.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fixture/chain.h"
#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

// The start of every MMAP2 it is shown, in the order shown.
class MapStarts : public transform::Analysis {
 public:
  std::bitset<128> wanted() const override {
    std::bitset<128> types;
    types.set(format::kMmap2);
    return types;
  }
  void see(const transform::RecordRef& r, transform::Session& s) override {
    auto m = s.learn_map(r);
    ASSERT_TRUE(m.ok()) << m.status();
    starts.push_back(m->fields.start);
  }
  std::vector<uint64_t> starts;
};

// Notes how many maps the analysis had seen when the pass met its first record.
class FirstRecord : public transform::Pass {
 public:
  FirstRecord(const MapStarts& analysis, std::optional<size_t>& seen)
      : analysis_(analysis), seen_(seen) {}
  std::string_view name() const override { return "first-record"; }
  bool wants(uint32_t /*type*/) const override { return true; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& /*s*/,
                       transform::RecordSink& out) override {
    if (!seen_) seen_ = analysis_.starts.size();
    return out.emit(r);
  }

 private:
  const MapStarts& analysis_;
  std::optional<size_t>& seen_;
};

Bytes three_maps(bool compressed, bool pipe = false) {
  PerfDataBuilder b;
  if (pipe) b.pipe_mode();
  if (compressed) b.compress(format::kCompressed, 40);
  b.mmap2(1, 0x3000, 0x1000, 0, "/c", 8, 1, 3)
      .sample(0x3010, 1, 1, 100)
      .mmap(1, 0x9000, 0x1000, 0, "/not-mmap2")
      .mmap2(1, 0x1000, 0x1000, 0, "/a", 8, 1, 1)
      .mmap2(1, 0x2000, 0x1000, 0, "/b", 8, 1, 2)
      .finished_round();
  return b.build();
}

// Returns what the analysis saw, and how much of it the pass had when it began.
std::pair<std::vector<uint64_t>, std::optional<size_t>> run(io::Input& in,
                                                            const std::string& out) {
  MapStarts analysis;
  std::optional<size_t> seen;
  auto chain = transform::run_pipeline(
      in, out,
      [&] {
        transform::PassChain c;
        c.push_back(std::make_unique<FirstRecord>(analysis, seen));
        return c;
      },
      {.analyses = {&analysis}});
  EXPECT_TRUE(chain.ok()) << chain.status();
  return {analysis.starts, seen};
}

TEST(Analysis, SeesTheWholeFileInFileOrderBeforeAnyPassMeetsARecord) {
  for (const bool compressed : {false, true}) {
    const std::string path = testing::write_temp(three_maps(compressed));
    auto in = io::open_input(path);
    ASSERT_TRUE(in.ok()) << in.status();
    const auto [starts, seen] = run(*in, path + ".out");
    EXPECT_EQ(starts, (std::vector<uint64_t>{0x3000, 0x1000, 0x2000})) << compressed;
    EXPECT_EQ(seen, 3u) << compressed;
  }
}

TEST(Analysis, AStreamIsReadOnceAndHasNone) {
  const std::string path = testing::write_temp(three_maps(false, /*pipe=*/true));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  io::Input in;
  in.name = "stream";
  in.pipe = std::make_unique<io::PipeStream>(fd, in.name);
  const auto [starts, seen] = run(in, path + ".out");
  EXPECT_TRUE(starts.empty());
  EXPECT_EQ(seen, 0u);
  in.pipe.reset();
  close(fd);
}

}  // namespace
}  // namespace pdfix
