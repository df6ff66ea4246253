// What a test of pdfix follow stands on: a directory of its own with raw/ (perf's chunks) and out/
// (follow's), and the commands it starts in the background, killed before the directory goes;
// follow's JSON lines and journal read back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {

// The chunks perf finished in `dir` (perf.data.<timestamp>), oldest first.
inline std::vector<std::string> chunks_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name.starts_with("perf.data.")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The pids a test's shell wrote into `file`, one a line.
inline std::set<uint32_t> pids_in(const std::string& file) {
  std::set<uint32_t> pids;
  std::ifstream in(file);
  for (uint32_t pid; in >> pid;) pids.insert(pid);
  return pids;
}

// `Base`: ::testing::Test, or TestWithParam<...>.
template <typename Base>
class FollowFixture : public Base {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    std::filesystem::create_directories(dir_ + "/raw");
    std::filesystem::create_directories(dir_ + "/out");
    background_.emplace(dir_);
  }
  void TearDown() override {
    background_.reset();  // what a failed test left running
    remove_test_dir(dir_);
  }
  std::string dir_;
  std::optional<Background> background_;
};

// The JSON lines follow printed, by chunk name (the summary's under "summary").
inline std::map<std::string, std::vector<llvm::json::Object>> lines_of(const std::string& text) {
  std::map<std::string, std::vector<llvm::json::Object>> by_chunk;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    llvm::json::Object o = parse_object(line);
    const std::string key =
        o.get("summary") != nullptr ? "summary" : o.getString("chunk").value_or("").str();
    by_chunk[key].push_back(std::move(o));
  }
  return by_chunk;
}

// Waits up to `seconds` for `done` to hold.
inline bool within(int seconds, const std::function<bool()>& done) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

inline bool within_a_minute(const std::function<bool()>& done) { return within(60, done); }

inline size_t journal_lines(const std::string& out) {
  std::ifstream in(out + "/.pdfix-follow-journal");
  size_t n = 0;
  // A finished chunk's line is its name and status; a line cut short is not one.
  for (std::string line; std::getline(in, line);) n += line.find(' ') != std::string::npos;
  return n;
}

// A test of chunks made from one small recording, followed with a HOME of the test's.
class FollowChunksTest : public FollowFixture<::testing::Test> {
 protected:
  void SetUp() override {
    FollowFixture::SetUp();
    // perf reads its cache at ~/.debug (PERF_BUILDID_DIR is what it tells the scripts it runs):
    // a HOME of the test's, where pdfix stores too.
    store_env_ = "env HOME=" + quote(dir_) + " ";
  }
  // Copies of one small recording as chunks perf finished, oldest first: the `from`th on.
  void make_chunks(int n, int from = 0) {
    for (int i = from; i < from + n; ++i) {
      std::filesystem::copy_file(corpus_dir() + "/sleep-B.data",
                                 dir_ + "/raw/perf.data.20261127120000" + std::to_string(10 + i));
    }
  }
  RunResult once(const std::string& more = "") {
    return sh(store_env_ + pdfix() + " follow --once --json " + more + " " + quote(dir_ + "/raw") +
              " " + quote(dir_ + "/out"));
  }
  std::string store_env_;
};

}  // namespace pdfix::e2e
