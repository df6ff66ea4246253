// The always-on run's pieces without perf: which names are finished chunks, and what the journal
// keeps across a restart.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixture/perf_data_builder.h"
#include "follow/chunk_watch.h"
#include "follow/journal.h"

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

}  // namespace
}  // namespace pdfix::follow
