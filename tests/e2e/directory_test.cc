// perf's directory format (perf record --threads): `data` and one file of records per thread.
// Every verb reads the whole directory; writing verbs write a directory back, or one file with
// --single-file; the `data` file alone is refused. perf is the judge of the counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr const char* kWorkload =
    "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; ls / >/dev/null'";

class DirectoryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    rec_ = dir_ + "/thr.data";
    RunResult r = sh("perf record -q --threads " + GetParam() + " -o " + rec_ + " -- " + kWorkload);
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_TRUE(fs::is_directory(rec_));
    ASSERT_TRUE(fs::exists(rec_ + "/data.0"));
    stats_ = perf_stats(rec_);
    ASSERT_GT(stats_["SAMPLE"], 0U) << "perf reads no sample from its own recording";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // perf's counts of `path` equal the recording's: samples, tasks, and maps of either kind.
  void expect_perf_counts_kept(const std::string& path) {
    auto after = perf_stats(path);
    ASSERT_FALSE(after.empty()) << "perf cannot read " << path;
    for (const char* type : {"SAMPLE", "COMM", "FORK", "EXIT"}) {
      EXPECT_EQ(after[type], stats_[type]) << type << " in " << path;
    }
    EXPECT_EQ(after["MMAP"] + after["MMAP2"], stats_["MMAP"] + stats_["MMAP2"]) << path;
  }
  // Every file map perf reports in `path` carries a build-id.
  void expect_maps_carry_ids(const std::string& path) {
    RunResult r = sh("perf script --show-mmap-events -i " + path + " 2>/dev/null | grep MMAP2");
    ASSERT_EQ(r.status, 0) << "no MMAP2 record in " << path;
    std::istringstream lines(r.out);
    int maps = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" /usr/") == std::string::npos) continue;
      ++maps;
      EXPECT_NE(line.find(" <"), std::string::npos) << line;
    }
    EXPECT_GT(maps, 0) << r.out;
  }
  std::string dir_, rec_;
  std::map<std::string, uint64_t> stats_;
};

TEST_P(DirectoryTest, EveryRecordIsReadAsPerfReadsIt) {
  auto ours = pdfix_counts(rec_);
  for (const char* type : {"SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT"}) {
    EXPECT_EQ(ours[type], stats_[type]) << type;
  }
  RunResult perf = sh("perf buildid-list -i " + rec_ + " 2>/dev/null | sort");
  RunResult pdfix_list = sh(pdfix() + " buildid-list " + rec_ + " | sort");
  EXPECT_NE(perf.out.find("[kernel.kallsyms]"), std::string::npos) << perf.out;
  EXPECT_EQ(pdfix_list.out, perf.out);
  // dump gives every record perf counts, those of data.N with their file.
  RunResult lines = sh(pdfix() + " dump " + rec_ + " | wc -l");
  RunResult in_parts = sh(pdfix() + " dump " + rec_ + " | grep -c '^data[.][0-9]*:0x'");
  ASSERT_GT(stats_["TOTAL"], 0U);
  EXPECT_EQ(std::stoull(lines.out), stats_["TOTAL"]);
  EXPECT_GE(std::stoull(in_parts.out), stats_["SAMPLE"]);
  // check reads it all, and names the data.N file of each finding there.
  RunResult check = sh(pdfix() + " check " + rec_);
  EXPECT_EQ(check.status, 1) << check.out;  // perf record -B: fix would add the build-ids
  EXPECT_NE(check.out.find("not ready to archive; pdfix fix repairs"), std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find(" at data."), std::string::npos) << check.out;
}

TEST_P(DirectoryTest, CopyIsByteIdenticalFileForFile) {
  RunResult r = sh(pdfix() + " copy " + rec_ + " " + dir_ + "/copy");
  ASSERT_EQ(r.status, 0) << r.err;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(rec_)) {
    ++files;
    EXPECT_TRUE(same_file(entry.path(), dir_ + "/copy/" + entry.path().filename().string()))
        << entry.path();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ + "/copy"), fs::directory_iterator()), files);
  EXPECT_EQ(fs::status(dir_ + "/copy").permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_P(DirectoryTest, FixWritesADirectoryPerfReadsWithEveryRecordAndItsIds) {
  const std::string out = dir_ + "/fixed";
  RunResult r = sh(pdfix() + " fix " + rec_ + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::is_directory(out));
  for (const auto& entry : fs::directory_iterator(rec_)) {
    EXPECT_TRUE(fs::is_regular_file(out + "/" + entry.path().filename().string()));
  }
  expect_perf_counts_kept(out);
  expect_maps_carry_ids(out);
  // perf's report of the fixed recording is the report of the recording.
  const std::string report = "perf report -q --stdio --sort dso,sym -i ";
  RunResult before = sh(report + rec_ + " 2>/dev/null");
  RunResult after = sh(report + out + " 2>/dev/null");
  EXPECT_NE(before.out.find('%'), std::string::npos) << before.out;
  EXPECT_EQ(after.out, before.out);
  // A recording already at OUT is replaced; a second fix changes nothing.
  r = sh(pdfix() + " fix " + out + " " + out + ".again && " + pdfix() + " fix " + rec_ + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_TRUE(same_file(entry.path(), out + ".again/" + entry.path().filename().string()));
  }
}

TEST_P(DirectoryTest, SingleFileHoldsEveryRecord) {
  const std::string out = dir_ + "/one.data";
  RunResult r = sh(pdfix() + " fix --single-file " + rec_ + " " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::is_regular_file(out));
  expect_perf_counts_kept(out);
  expect_maps_carry_ids(out);
  r = sh(pdfix() + " info " + out);
  EXPECT_EQ(r.out.find("dir_format"), std::string::npos) << r.out;
  // To stdout as well: the file is spooled and comes out whole.
  r = sh(pdfix() + " copy --single-file " + rec_ + " - | cat > " + dir_ + "/copied.data");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_perf_counts_kept(dir_ + "/copied.data");
}

TEST_P(DirectoryTest, ItsDataFileAloneIsRefused) {
  for (const std::string verb : {"fix", "copy"}) {
    RunResult r = sh(pdfix() + " " + verb + " " + rec_ + "/data " + dir_ + "/x.data");
    EXPECT_EQ(r.status, 2) << verb;
    EXPECT_NE(r.err.find("give the directory"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ + "/x.data"));
  }
  EXPECT_EQ(sh(pdfix() + " info " + rec_ + "/data").status, 2);
}

TEST_P(DirectoryTest, NoOtherDirectoryIsReplaced) {
  const std::string other = dir_ + "/other";
  fs::create_directory(other);
  std::ofstream(other + "/notes.txt") << "mine\n";
  RunResult r = sh(pdfix() + " fix " + rec_ + " " + other);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not a perf directory recording"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(other + "/notes.txt"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 2)
      << "a temporary directory was left behind";
  r = sh(pdfix() + " fix " + rec_ + " -");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--single-file"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Threads, DirectoryTest, ::testing::Values("", "-z"),
                         [](const auto& info) { return info.param.empty() ? "Plain" : "Zstd"; });

}  // namespace
}  // namespace pdfix::e2e
