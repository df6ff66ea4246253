// What a test of pdfix follow stands on: a directory of its own with raw/ (perf's chunks) and out/
// (follow's), and the commands it starts in the background, killed before the directory goes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "e2e/harness.h"

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

}  // namespace pdfix::e2e
