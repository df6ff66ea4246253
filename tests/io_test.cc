// The output: pieces gathered from the caller's own bytes and from views it keeps alive come out
// in order, whichever way the worker writes them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "io/output.h"

namespace pdfix::io {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Bytes that differ from one offset to the next, so a piece out of place shows.
std::vector<uint8_t> pattern(size_t n, size_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 131 + seed * 7919) >> 3);
  return v;
}

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pdfix-output-" + std::to_string(getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes pieces of every kind the writer hands over: its own short bytes, views shorter than a
  // page (copied), views of a few pages and views longer than a job, each view held only by the
  // output once handed over. Returns what the output must hold.
  std::vector<uint8_t> write_mixed(Output& out, int* views_freed) {
    std::vector<uint8_t> expected;
    const size_t sizes[] = {90, 3000, 4096, 70'000, 300'000, 17, 1 << 20, 8192, 5};
    for (size_t round = 0; round < 6; ++round) {
      for (size_t i = 0; i < std::size(sizes); ++i) {
        auto bytes = pattern(sizes[i], round * 100 + i);
        expected.insert(expected.end(), bytes.begin(), bytes.end());
        if (i % 3 == 0) {
          EXPECT_TRUE(out.write(bytes).ok());
          continue;
        }
        auto held = std::shared_ptr<std::vector<uint8_t>>(
            new std::vector<uint8_t>(std::move(bytes)), [views_freed](std::vector<uint8_t>* v) {
              // Scribbled over before it goes, so a write after the release would show.
              std::fill(v->begin(), v->end(), 0xee);
              ++*views_freed;
              delete v;
            });
        std::span<const uint8_t> view(*held);
        EXPECT_TRUE(out.write_mapped(view, {}, std::move(held)).ok());
      }
    }
    return expected;
  }

  std::string dir_;
};

TEST_F(OutputTest, GatheredPiecesComeOutInOrderAndPatchesLand) {
  const std::string path = dir_ + "/out";
  auto out = Output::create(path, Output::Mode::kSeekable);
  ASSERT_TRUE(out.ok()) << out.status();
  int freed = 0;
  std::vector<uint8_t> expected = write_mixed(**out, &freed);
  EXPECT_EQ((*out)->position(), expected.size());
  const std::vector<uint8_t> head = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE((*out)->patch(100, head).ok());
  std::copy(head.begin(), head.end(), expected.begin() + 100);
  ASSERT_TRUE((*out)->commit().ok());
  out->reset();
  EXPECT_EQ(freed, 6 * 6) << "every view is let go once written";
  EXPECT_EQ(read_file(path), expected);
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
}

TEST_F(OutputTest, AStreamGetsThePiecesInOrder) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<uint8_t> got;
  std::thread reader([&] {
    std::ifstream f(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  });
  std::vector<uint8_t> expected;
  int freed = 0;  // outlives the output, whose views count on it as they go
  {
    auto out = Output::create(fifo, Output::Mode::kStreaming);
    ASSERT_TRUE(out.ok()) << out.status();
    expected = write_mixed(**out, &freed);
    ASSERT_TRUE((*out)->commit().ok());
  }
  reader.join();
  EXPECT_EQ(got, expected);
}

TEST_F(OutputTest, DroppedUncommittedLeavesNothing) {
  const std::string path = dir_ + "/out";
  int freed = 0;
  {
    auto out = Output::create(path, Output::Mode::kSeekable);
    ASSERT_TRUE(out.ok());
    write_mixed(**out, &freed);
  }
  EXPECT_EQ(freed, 6 * 6) << "an output dropped uncommitted lets go of every view too";
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir_)) << "the temporary file is removed";
}

}  // namespace
}  // namespace pdfix::io
