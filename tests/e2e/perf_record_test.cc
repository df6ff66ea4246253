// Recordings made here with the machine's perf: round-tripped by pdfix, and rewritten by a pass
// that grows records, with perf itself as the judge of the result.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "e2e/harness.h"
#include "fixture/chain.h"
#include "fixture/fake_build_id_pass.h"
#include "format/record_type.h"
#include "format/records.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Busy enough to get samples and maps, short enough for CI.
constexpr const char* kWorkload =
    "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; ls / >/dev/null'";

struct Recording {
  std::string name;
  std::string perf_args;  // before "--"
  bool pipe;
};

class PerfRecordTest : public ::testing::TestWithParam<Recording> {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    path_ = dir_ + "/rec.data";
    const Recording& r = GetParam();
    std::string cmd = "perf record -q " + r.perf_args + (r.pipe ? " -o - " : " -o " + path_) +
                      " -- " + kWorkload + (r.pipe ? " > " + path_ : "");
    RunResult rec = sh(cmd);
    ASSERT_EQ(rec.status, 0) << cmd << "\n" << rec.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string dir_, path_;
};

TEST_P(PerfRecordTest, CopyIsByteIdentical) {
  RunResult r = sh(pdfix() + " copy " + path_ + " " + dir_ + "/copy.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(path_, dir_ + "/copy.data"));
  if (GetParam().pipe) {
    r = sh("cat " + path_ + " | " + pdfix() + " copy - - | cat > " + dir_ + "/piped.data");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(path_, dir_ + "/piped.data"));
  }
}

TEST_P(PerfRecordTest, InfoCountsEqualPerfs) {
  auto perf = perf_stats(path_);
  ASSERT_FALSE(perf.empty()) << "perf cannot read its own recording";
  ASSERT_GT(perf["SAMPLE"], 0U);
  auto ours = pdfix_counts(path_);
  for (const char* type : {"SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT"}) {
    EXPECT_EQ(ours[type], perf[type]) << type;
  }
}

// The records of the kinds perf and pdfix both name, as (type, size, offset) (on a stream only
// (type, size): perf counts its offsets from another origin). Inside zstd data both give the
// offset of the compressed record that holds it.
using RecordSet = std::multiset<std::tuple<std::string, uint64_t, uint64_t>>;
RecordSet records_in(const std::string& text, const std::regex& line, int type, int size,
                     int offset, int size_base, bool with_offsets) {
  static const std::set<std::string> kinds{"SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT"};
  RecordSet out;
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    const std::smatch& m = *it;
    if (!kinds.contains(m[type])) continue;
    out.emplace(m[type], std::stoull(m[size], nullptr, size_base),
                with_offsets ? std::stoull(m[offset], nullptr, 16) : 0);
  }
  return out;
}

TEST_P(PerfRecordTest, DumpListsEveryRecordAsPerfDoes) {
  RunResult r = sh(pdfix() + " dump " + path_);
  ASSERT_EQ(r.status, 0) << r.err;
  RunResult perf = sh("perf report -D -i " + path_ + " 2>/dev/null");
  ASSERT_EQ(perf.status, 0);
  const bool offsets = !GetParam().pipe;
  static const std::regex ours(
      R"(^0x([0-9a-f]+) (?:\[zstd \+0x[0-9a-f]+\] )?(\w+) misc=\S+ size=(\d+))",
      std::regex::multiline);
  static const std::regex theirs(R"(^\S+ 0x([0-9a-f]+) \[0x([0-9a-f]+)\]: PERF_RECORD_(\w+))",
                                 std::regex::multiline);
  const RecordSet dumped = records_in(r.out, ours, 2, 3, 1, 10, offsets);
  const RecordSet perfs = records_in(perf.out, theirs, 3, 2, 1, 16, offsets);
  EXPECT_GT(perfs.size(), 10U);
  EXPECT_EQ(dumped, perfs);
  EXPECT_NE(r.out.find("filename="), std::string::npos);
}

TEST_P(PerfRecordTest, PerfReadsWhatTheWriterRewrote) {
  auto in = io::open_input(path_);
  ASSERT_TRUE(in.ok());
  // Every user-space map gets a made-up build-id: records grow and move, inside compressed data
  // too.
  testing::FakeBuildIdPass pass(0xab, [](const format::MmapRecord& m) {
    return (m.misc & format::kCpuModeMask) == format::kCpuModeUser;
  });
  const std::string out = dir_ + "/tagged.data";
  auto chain = transform::run_pipeline(*in, out, testing::chain_of(pass), {});
  ASSERT_TRUE(chain.ok()) << chain.status();
  ASSERT_GT(testing::first_pass<testing::FakeBuildIdPass>(*chain).upgraded, 0);

  auto before = perf_stats(path_);
  auto after = perf_stats(out);
  ASSERT_FALSE(after.empty()) << "perf cannot read the rewritten file";
  for (const char* type : {"SAMPLE", "COMM", "FORK", "EXIT"}) EXPECT_EQ(after[type], before[type]);
  EXPECT_EQ(after["MMAP"] + after["MMAP2"], before["MMAP"] + before["MMAP2"]);
  RunResult script = sh("perf script --show-mmap-events -i " + out);
  ASSERT_EQ(script.status, 0) << script.err;
  EXPECT_NE(script.out.find("<abababababababababababababababababababab>"), std::string::npos);
  // Samples are attributed as before. (Symbols are not compared: the made-up id sends perf
  // looking for a libc with that id, which does not exist. A wrong build-id is worse than none.)
  const std::string report = "perf report --stdio -g none --sort comm,pid -i ";
  RunResult a = sh(report + path_ + " | grep -v '^#'");
  RunResult b = sh(report + out + " | grep -v '^#'");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out);
}

INSTANTIATE_TEST_SUITE_P(Recordings, PerfRecordTest,
                         ::testing::Values(Recording{"Plain", "", false},
                                           Recording{"NoBuildIdsCallGraph", "-B -g", false},
                                           Recording{"Zstd", "-z", false},
                                           Recording{"Pipe", "", true},
                                           Recording{"PipeCallGraph", "-g", true}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace pdfix::e2e
