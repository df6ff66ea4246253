// The always-on run's pieces without perf: which names are finished chunks, what the journal
// keeps across a restart, and when a chunk not fixed is tried again.
#include "follow/follow.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fixture/perf_data_builder.h"
#include "follow/chunk_watch.h"
#include "follow/journal.h"
#include "io/exit_status.h"
#include "llvm/Support/JSON.h"

namespace pdfix::follow {
namespace {

TEST(ChunkNames, OnlyTheNamePerfGivesAFinishedChunk) {
  EXPECT_TRUE(is_chunk_name("perf.data.2026112721354139", "perf.data"));
  EXPECT_TRUE(is_chunk_name("app.data.1", "app.data"));
  // The file perf is still writing, and what is not perf's.
  EXPECT_FALSE(is_chunk_name("perf.data", "perf.data"));
  EXPECT_FALSE(is_chunk_name("perf.data.", "perf.data"));
  EXPECT_FALSE(is_chunk_name("perf.data.old", "perf.data"));
  EXPECT_FALSE(is_chunk_name("perf.data.2026x", "perf.data"));
  EXPECT_FALSE(is_chunk_name("perf.datax2026", "perf.data"));
  EXPECT_FALSE(is_chunk_name("other.data.2026", "perf.data"));
  EXPECT_FALSE(is_chunk_name(".perf.data.2026.pdfix-AbC123", "perf.data"));
  // Another base's chunk, by perf's timestamp: what a run given the wrong --base is told of.
  EXPECT_EQ(chunk_base("rec.data.2026112721354139"), "rec.data");
  EXPECT_EQ(chunk_base("perf.data.20261127213541"), "perf.data");
  EXPECT_EQ(chunk_base("x.2026112721354"), std::nullopt);
  EXPECT_EQ(chunk_base("rec.data.old"), std::nullopt);
  EXPECT_EQ(chunk_base("rec.data"), std::nullopt);
  EXPECT_EQ(chunk_base(".2026112721354139"), std::nullopt);
}

TEST(Journal, KeepsFinishedChunksAcrossARestartButNotALineCutShort) {
  const std::string dir = testing::write_temp({}, "journal") + ".d";
  std::filesystem::create_directories(dir);
  {
    auto journal = Journal::open(dir);
    ASSERT_TRUE(journal.ok()) << journal.status();
    ASSERT_TRUE(journal->record("perf.data.1", 0).ok());
    ASSERT_TRUE(journal->record("perf.data.2", 3).ok());
    // One run a directory.
    auto second = Journal::open(dir);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("another pdfix follow"), std::string::npos);
  }
  // Killed while writing a line.
  std::ofstream(dir + "/" + Journal::kName, std::ios::app) << "perf.data.3";
  auto journal = Journal::open(dir);
  ASSERT_TRUE(journal.ok()) << journal.status();
  EXPECT_EQ(journal->finished("perf.data.1"), 0);
  EXPECT_EQ(journal->finished("perf.data.2"), 3);
  EXPECT_EQ(journal->finished("perf.data.3"), std::nullopt);
  ASSERT_TRUE(journal->record("perf.data.3", 0).ok());
  EXPECT_EQ(journal->size(), 3u);
  std::filesystem::remove_all(dir);
}

// A run of days: the journal is cut to the chunks still in DIR once it has grown enough, keeps its
// lock through the cut, and a restart finds the same.
TEST(Journal, IsCutToTheChunksStillThereOnceItHasGrownEnough) {
  const std::string dir = testing::write_temp({}, "journal") + ".d";
  std::filesystem::create_directories(dir);
  const auto name = [](size_t i) { return "perf.data." + std::to_string(1000000 + i); };
  {
    auto journal = Journal::open(dir);
    ASSERT_TRUE(journal.ok()) << journal.status();
    for (size_t i = 0; i + 1 < Journal::kLinesBeforeACut; ++i) {
      ASSERT_TRUE(journal->record(name(i), 0).ok());
    }
    EXPECT_FALSE(journal->wants_cut());
    ASSERT_TRUE(journal->record(name(Journal::kLinesBeforeACut - 1), 3).ok());
    ASSERT_TRUE(journal->wants_cut());
    // The last two are still in DIR.
    const auto wanted = [&](const std::string& c) {
      return c >= name(Journal::kLinesBeforeACut - 2);
    };
    ASSERT_TRUE(journal->cut(wanted).ok());
    EXPECT_FALSE(journal->wants_cut());
    EXPECT_EQ(journal->size(), 2u);
    EXPECT_EQ(journal->finished(name(0)), std::nullopt);
    EXPECT_EQ(journal->finished(name(Journal::kLinesBeforeACut - 1)), 3);
    // Still this run's alone, and still appended to.
    EXPECT_FALSE(Journal::open(dir).ok());
    ASSERT_TRUE(journal->record("perf.data.2000000", 0).ok());
  }
  std::ifstream in(dir + "/" + Journal::kName);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(text, name(Journal::kLinesBeforeACut - 2) + " 0\n" +
                      name(Journal::kLinesBeforeACut - 1) + " 3\nperf.data.2000000 0\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + Journal::kName + ".new"));
  auto again = Journal::open(dir);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->size(), 3u);
  std::filesystem::remove_all(dir);
}

// A backlog (--once) of two chunks whose fix fails while `fails` says so (no space left, say):
// what follow tells of each try, and what its journal keeps.
class Retries : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::write_temp({}, "follow") + ".d";
    std::filesystem::create_directories(dir_ + "/raw");
    std::filesystem::create_directories(dir_ + "/out");
    for (const char* name : {"perf.data.1", "perf.data.2"}) {
      std::ofstream(dir_ + "/raw/" + name) << "chunk";
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<FollowSummary> run(const std::function<bool(const std::string&)>& fails) {
    lines_.clear();
    const FixChunk fix = [&](const std::string& in, const std::string& out, llvm::json::Object&) {
      const std::string name = std::filesystem::path(in).filename();
      ++tries_[name];
      if (fails(name)) return kExitError;
      std::ofstream(out) << "fixed";
      return kExitOk;
    };
    return follow({.dir = dir_ + "/raw", .out_dir = dir_ + "/out", .once = true}, fix,
                  [&](llvm::json::Object line) { lines_.push_back(std::move(line)); });
  }
  std::string journal() const {
    std::ifstream in(dir_ + "/out/" + Journal::kName);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::string dir_;
  std::map<std::string, int> tries_;
  std::vector<llvm::json::Object> lines_;
};

TEST_F(Retries, AChunkNotFixedIsTriedAgainOnceALaterOneIsFixed) {
  auto summary =
      run([&](const std::string& name) { return name == "perf.data.1" && tries_[name] == 1; });
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->fixed, 2u);
  EXPECT_EQ(summary->failed, 0u);
  EXPECT_EQ(tries_["perf.data.1"], 2);
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_EQ(lines_[0].getString("chunk"), "perf.data.1");
  EXPECT_EQ(lines_[0].getInteger("status"), kExitError);
  EXPECT_EQ(lines_[0].getInteger("tries"), 1);
  EXPECT_NE(lines_[0].getString("note")->find("tried again once a later chunk is fixed"),
            llvm::StringRef::npos);
  EXPECT_EQ(lines_[1].getString("chunk"), "perf.data.2");
  EXPECT_EQ(lines_[2].getString("chunk"), "perf.data.1");
  EXPECT_EQ(lines_[2].getInteger("status"), kExitOk);
  EXPECT_EQ(lines_[2].getInteger("tries"), 2);
  EXPECT_EQ(journal(), "perf.data.2 0\nperf.data.1 0\n");
}

TEST_F(Retries, AChunkThatStillFailsIsLeftOutOfTheJournalAndTriedAtTheNextStart) {
  auto summary = run([](const std::string& name) { return name == "perf.data.1"; });
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->fixed, 1u);
  EXPECT_EQ(summary->failed, 1u);
  // Once alone, once after the other was fixed.
  EXPECT_EQ(tries_["perf.data.1"], 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/perf.data.1"));
  EXPECT_EQ(journal(), "perf.data.2 0\n");

  // An earlier pdfix journalled a failure for good: that line is not taken as done either.
  std::ofstream(dir_ + "/out/" + Journal::kName, std::ios::app) << "perf.data.1 2\n";
  summary = run([](const std::string&) { return false; });
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->fixed, 1u);
  EXPECT_EQ(summary->earlier, 1u);
  EXPECT_EQ(summary->failed, 0u);
  EXPECT_EQ(tries_["perf.data.1"], 3);
  EXPECT_EQ(tries_["perf.data.2"], 1);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/perf.data.1"));
}

}  // namespace
}  // namespace pdfix::follow
