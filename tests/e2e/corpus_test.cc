// Every perf.data of the foreign corpus: read, round-tripped byte for byte, counted like perf.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Every file; the files pdfix reads; the files perf reads too.
class CorpusTest : public ::testing::TestWithParam<CorpusFile> {};
class AcceptedCorpusTest : public ::testing::TestWithParam<CorpusFile> {};
class PerfCorpusTest : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(CorpusTest, CopyIsByteIdenticalOrRefused) {
  const CorpusFile& f = GetParam();
  const std::string dir = temp_dir();
  const std::string out = dir + "/out.data";
  RunResult r = sh(pdfix() + " copy " + quote(f.path) + " " + quote(out));
  if (f.must_be_refused) {
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("offset 0x"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(fs::is_empty(dir)) << "a refused input left output behind";
  } else {
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(f.path, out));
  }
  fs::remove_all(dir);
}

TEST_P(AcceptedCorpusTest, CopyThroughStdinAndStdoutIsByteIdentical) {
  const CorpusFile& f = GetParam();
  const std::string dir = temp_dir();
  // A pipe on both ends: file-mode data can only be mapped, so it comes in by redirection.
  RunResult r = sh("cat " + quote(f.path) + " | " + pdfix() + " copy - - | cat > " + dir + "/a");
  RunResult info = sh(pdfix() + " info --json " + quote(f.path));
  if (info.out.find("\"mode\": \"pipe\"") != std::string::npos) {
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(f.path, dir + "/a"));
  } else {
    EXPECT_NE(r.err.find("give its path"), std::string::npos) << r.err;
  }
  r = sh(pdfix() + " copy - - < " + quote(f.path) + " | cat > " + dir + "/b");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(f.path, dir + "/b"));
  fs::remove_all(dir);
}

TEST_P(PerfCorpusTest, InfoCountsEqualPerfs) {
  const CorpusFile& f = GetParam();
  auto perf = perf_stats(f.path);
  ASSERT_FALSE(perf.empty()) << "the machine's perf does not read " << f.name;
  auto ours = pdfix_counts(f.path);
  for (const char* type : {"SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT"}) {
    EXPECT_EQ(ours[type], perf[type]) << type << " in " << f.name;
  }
}

TEST_P(AcceptedCorpusTest, TruncatedCopiesAreRefused) {
  const CorpusFile& f = GetParam();
  const std::string dir = temp_dir();
  const auto size = fs::file_size(f.path);
  for (double cut : {0.3, 0.5, 0.8}) {
    const std::string part = dir + "/part.data";
    fs::copy_file(f.path, part, fs::copy_options::overwrite_existing);
    fs::resize_file(part, static_cast<uintmax_t>(static_cast<double>(size) * cut));
    RunResult r = sh(pdfix() + " copy " + part + " " + dir + "/out.data");
    EXPECT_EQ(r.status, 2) << f.name << " cut at " << cut << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/out.data"));
    r = sh(pdfix() + " info " + part);
    EXPECT_EQ(r.status, 2) << f.name << " cut at " << cut;
  }
  fs::remove_all(dir);
}

// The repairs change maps and the build-id table, never what perf counts.
void expect_counts_kept(const CorpusFile& f, const std::string& verb) {
  const std::string dir = temp_dir();
  const std::string out = dir + "/out.data";
  RunResult r = sh(pdfix() + " " + verb + " " + quote(f.path) + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  auto before = perf_stats(f.path);
  ASSERT_EQ(before.empty(), !f.perf_reads) << f.name;
  if (!before.empty()) {
    auto after = perf_stats(out);
    ASSERT_FALSE(after.empty()) << "perf reads " << f.name << " but not pdfix's output";
    for (const char* type : {"SAMPLE", "COMM", "FORK", "EXIT"}) {
      EXPECT_EQ(after[type], before[type]) << type;
    }
    EXPECT_EQ(after["MMAP"] + after["MMAP2"], before["MMAP"] + before["MMAP2"]);
  }
  // And pdfix reads its own output, with the same number of records of each kind.
  auto ours_before = pdfix_counts(f.path);
  auto ours_after = pdfix_counts(out);
  EXPECT_EQ(ours_after["SAMPLE"], ours_before["SAMPLE"]);
  fs::remove_all(dir);
}

TEST_P(AcceptedCorpusTest, InjectLeavesPerfsCountsAlone) {
  expect_counts_kept(GetParam(), "inject --buildids");
}

TEST_P(AcceptedCorpusTest, FixLeavesPerfsCountsAlone) { expect_counts_kept(GetParam(), "fix"); }

// check's lines that are errors, and of those the ones a pass repairs.
// What check --json found, counted by what pdfix fix does about it.
struct CheckCounts {
  int status = -1;
  int errors = 0;
  int fixable = 0;        // findings a pass repairs (errors and notes)
  int unrecoverable = 0;  // findings that stay after fix
  std::string out;
};
CheckCounts check(const std::string& path) {
  RunResult r = sh(pdfix() + " check --json " + quote(path));
  CheckCounts c{r.status, 0, 0, 0, r.out + r.err};
  auto json = llvm::json::parse(r.out);
  if (!json) {
    llvm::consumeError(json.takeError());
    return c;
  }
  const llvm::json::Array* findings = json->getAsObject()->getArray("findings");
  for (const llvm::json::Value& v : *findings) {
    const llvm::json::Object& f = *v.getAsObject();
    if (f.getString("severity") == "error") ++c.errors;
    if (!f.getString("fixed_by")->empty()) ++c.fixable;
    if (*f.getBoolean("unrecoverable")) ++c.unrecoverable;
  }
  return c;
}

// The status check's findings call for: 3 when something stays after fix, else 1 when fix
// repairs something, else 0.
int expected_status(const CheckCounts& c) {
  if (c.unrecoverable > 0) return 3;
  return c.fixable > 0 ? 1 : 0;
}

// check's exit status follows its findings, and fix leaves nothing that a pass repairs, and
// hides nothing that none repairs.
TEST_P(CorpusTest, CheckOfFixOutputFindsNothingFixCouldRepair) {
  const CorpusFile& f = GetParam();
  const CheckCounts before = check(f.path);
  if (f.must_be_refused) {
    // Unreadable from the start (2), or a record that cannot be read: a finding no pass
    // repairs (3).
    EXPECT_TRUE(before.status == 2 || (before.status == 3 && before.unrecoverable > 0))
        << before.out;
    return;
  }
  ASSERT_EQ(before.status, expected_status(before)) << before.out;
  const std::string dir = temp_dir();
  const std::string out = dir + "/out.data";
  RunResult r = sh(pdfix() + " fix " + quote(f.path) + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const CheckCounts after = check(out);
  EXPECT_EQ(after.status, expected_status(after)) << after.out;
  EXPECT_EQ(after.fixable, 0) << after.out;
  EXPECT_NE(after.status, 1) << after.out;
  // What no pass repairs (bytes appended, a file no id can be proven for) is still there.
  EXPECT_EQ(after.unrecoverable, before.unrecoverable) << before.out << after.out;
  fs::remove_all(dir);
}

// The comparisons with perf run over the files perf reads (harness.cc names those it does not);
// this checks that list against perf itself, so that a perf that reads less, or a corpus that
// grew, cannot thin the comparisons out unnoticed.
TEST(CorpusCoverage, PerfReadsExactlyTheFilesSaid) {
  size_t read = 0;
  for (const CorpusFile& f : corpus_files()) {
    EXPECT_EQ(!perf_stats(f.path).empty(), f.perf_reads) << f.name;
    if (f.perf_reads) ++read;
  }
  EXPECT_GE(read, 20U);
}

// A second reader, written apart from perf: Debian's hotspot-perfparser. It reads the perf 6.16
// recording perf 6.1 refuses, so pdfix's counts there are not checked against pdfix alone; and it
// reads what fix wrote, with the same counts.
class HotspotCorpusTest : public ::testing::TestWithParam<CorpusFile> {
 protected:
  void SetUp() override {
    if (!hotspot_perfparser().empty()) return;
    if (perf_required()) FAIL() << "hotspot-perfparser is not installed (scripts/setup.sh does)";
    GTEST_SKIP() << "*** hotspot is not installed: SKIPPED ***";
  }
};

TEST_P(HotspotCorpusTest, CountsEqualHotspotsBeforeAndAfterFix) {
  const CorpusFile& f = GetParam();
  auto theirs = hotspot_stats(f.path);
  ASSERT_FALSE(theirs.empty()) << "hotspot-perfparser reads nothing of " << f.name;
  auto ours = pdfix_counts(f.path);
  EXPECT_EQ(ours["SAMPLE"], theirs["samples"]);
  EXPECT_EQ(ours["MMAP"] + ours["MMAP2"], theirs["mmaps"]);
  const std::string dir = temp_dir();
  ASSERT_EQ(sh(pdfix() + " fix " + quote(f.path) + " " + dir + "/out.data").status, 0);
  EXPECT_EQ(hotspot_stats(dir + "/out.data"), theirs);
  fs::remove_all(dir);
}

TEST(CorpusCoverage, HotspotReadsExactlyTheFilesSaid) {
  if (hotspot_perfparser().empty()) {
    if (perf_required()) FAIL() << "hotspot-perfparser is not installed (scripts/setup.sh does)";
    GTEST_SKIP() << "*** hotspot is not installed: SKIPPED ***";
  }
  size_t read = 0;
  for (const CorpusFile& f : accepted_corpus_files()) {
    auto theirs = hotspot_stats(f.path);
    auto ours = pdfix_counts(f.path);
    const bool agree = !theirs.empty() && ours["SAMPLE"] == theirs["samples"] &&
                       ours["MMAP"] + ours["MMAP2"] == theirs["mmaps"];
    EXPECT_EQ(agree, f.hotspot_reads) << f.name;
    if (f.hotspot_reads) ++read;
  }
  EXPECT_GE(read, 20U);
}

INSTANTIATE_TEST_SUITE_P(Foreign, HotspotCorpusTest,
                         ::testing::ValuesIn(hotspot_read_corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Foreign, AcceptedCorpusTest, ::testing::ValuesIn(accepted_corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Foreign, PerfCorpusTest, ::testing::ValuesIn(perf_read_corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Foreign, CorpusTest, ::testing::ValuesIn(corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });

}  // namespace
}  // namespace pdfix::e2e
