// The analysis of a whole recording (transform/analysis.h): swept once, the first time a pass asks,
// over every wanted record in file order (compressed ones too); a stream, read once, has none.
#include "transform/analysis.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

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

// Asks for the analysis at its first record: what it had then.
class AsksFirst : public transform::Pass {
 public:
  AsksFirst(transform::OnDemand<MapStarts>& analysis, std::optional<std::vector<uint64_t>>& got)
      : analysis_(analysis), got_(got) {}
  std::string_view name() const override { return "asks-first"; }
  bool wants(uint32_t /*type*/) const override { return true; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& /*s*/,
                       transform::RecordSink& out) override {
    if (!got_) {
      const MapStarts* a = analysis_.get();
      got_ = a != nullptr ? a->starts : std::vector<uint64_t>{};
    }
    return out.emit(r);
  }

 private:
  transform::OnDemand<MapStarts>& analysis_;
  std::optional<std::vector<uint64_t>>& got_;
};

std::string three_maps(bool compressed, bool pipe = false) {
  PerfDataBuilder b;
  if (pipe) b.pipe_mode();
  if (compressed) b.compress(format::kCompressed, 40);
  b.mmap2(1, 0x3000, 0x1000, 0, "/c", 8, 1, 3)
      .sample(0x3010, 1, 1, 100)
      .mmap(1, 0x9000, 0x1000, 0, "/not-mmap2")
      .mmap2(1, 0x1000, 0x1000, 0, "/a", 8, 1, 1)
      .mmap2(1, 0x2000, 0x1000, 0, "/b", 8, 1, 2)
      .finished_round();
  return testing::write_temp(b.build());
}

// What the pass got when it asked at its first record.
std::vector<uint64_t> run(io::Input& in, transform::OnDemand<MapStarts>& analysis,
                          const std::string& out) {
  std::optional<std::vector<uint64_t>> got;
  auto chain = transform::run_pipeline(in, out,
                                       [&] {
                                         transform::PassChain c;
                                         c.push_back(std::make_unique<AsksFirst>(analysis, got));
                                         return c;
                                       },
                                       {});
  EXPECT_TRUE(chain.ok()) << chain.status();
  EXPECT_TRUE(got.has_value());
  return got.value_or(std::vector<uint64_t>{});
}

TEST(Analysis, IsSweptOverTheWholeFileInFileOrderWhenFirstAskedAndOnce) {
  for (const bool compressed : {false, true}) {
    const std::string path = three_maps(compressed);
    auto in = io::open_input(path);
    ASSERT_TRUE(in.ok()) << in.status();
    transform::OnDemand<MapStarts> analysis(*in);
    const std::vector<uint64_t> whole{0x3000, 0x1000, 0x2000};
    EXPECT_EQ(run(*in, analysis, path + ".out"), whole) << compressed;
    // A second run of passes asks again: the sweep is not repeated.
    EXPECT_EQ(run(*in, analysis, path + ".out"), whole) << compressed;
    EXPECT_EQ(analysis.get()->starts, whole) << compressed;
  }
}

TEST(Analysis, AStreamIsReadOnceAndHasNone) {
  const std::string path = three_maps(false, /*pipe=*/true);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  io::Input in;
  in.name = "stream";
  in.pipe = std::make_unique<io::PipeStream>(fd, in.name);
  transform::OnDemand<MapStarts> analysis(in);
  EXPECT_EQ(analysis.get(), nullptr);
  // And the passes still read every record of it.
  EXPECT_TRUE(run(in, analysis, path + ".out").empty());
  in.pipe.reset();
  close(fd);
}

}  // namespace
}  // namespace pdfix
