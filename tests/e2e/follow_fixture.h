// What a test of pdfix follow stands on: a directory of its own with raw/ (perf's chunks) and out/
// (follow's), and the commands it starts in the background, killed before the directory goes.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {

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
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::optional<Background> background_;
};

}  // namespace pdfix::e2e
