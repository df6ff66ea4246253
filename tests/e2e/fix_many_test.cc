// `pdfix fix IN... OUTDIR` over real recordings: each recording fixed into OUTDIR under its own
// name, to the very bytes `pdfix fix IN OUT` writes for it alone, the store the same as fixing
// them one by one fills; a recording that cannot be read is reported and the others are fixed;
// and what would make two outputs one, or a bundle of several, is refused before anything is
// written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// The files under `dir`, relative to it, and each regular file's bytes' size.
std::set<std::string> tree_of(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string line = fs::relative(e.path(), dir).string();
    if (e.is_regular_file() && !e.is_symlink()) line += " " + std::to_string(e.file_size());
    out.insert(line);
  }
  return out;
}

class FixManyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    for (const std::string d : {"in", "many", "one", "home-many", "home-one"}) {
      fs::create_directories(dir_ + "/" + d);
    }
    // Three recordings that share most of their binaries (libc, the loader, the kernel).
    for (const auto& [name, command] : std::vector<std::pair<std::string, std::string>>{
             {"a.data", "ls -R /usr/share/doc"},
             {"b.data", "gzip -c /usr/bin/perf"},
             {"c.data", "sh -c 'ls -R /usr/share/doc | sort'"}}) {
      RunResult r = sh("perf record -q -g -o " + quote(dir_ + "/in/" + name) + " -- " + command +
                       " >/dev/null");
      ASSERT_EQ(r.status, 0) << r.err;
      inputs_.push_back(dir_ + "/in/" + name);
    }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string inputs() const {
    std::string out;
    for (const std::string& in : inputs_) out += quote(in) + " ";
    return out;
  }
  std::string dir_;
  std::vector<std::string> inputs_;
};

TEST_F(FixManyTest, EachIsFixedAsAloneAndTheStoreIsTheSame) {
  RunResult r = sh("HOME=" + quote(dir_ + "/home-many") + " " + pdfix() + " fix --store --json " +
                   inputs() + quote(dir_ + "/many"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  size_t n = 0;
  bool summarized = false;
  for (std::string line; std::getline(lines, line); ++n) {
    const llvm::json::Object o = parse_object(line);
    if (const llvm::json::Object* summary = o.getObject("summary")) {
      EXPECT_EQ(int_of(*summary, "fixed"), 3);
      EXPECT_EQ(int_of(*summary, "not_fixed"), 0);
      summarized = true;
      break;
    }
    ASSERT_LT(n, inputs_.size());
    EXPECT_EQ(o.getString("input").value_or(""), inputs_[n]);
    EXPECT_EQ(int_of(o, "status"), 0);
    ASSERT_NE(o.getObject("fix"), nullptr) << line;
    EXPECT_NE(o.getObject("fix")->getObject("store"), nullptr) << line;
  }
  EXPECT_EQ(n, inputs_.size());
  EXPECT_TRUE(summarized) << r.out;
  EXPECT_NE(r.err.find("pdfix fix: 3 fixed, 0 with something missing, 0 not fixed"),
            std::string::npos)
      << r.err;
  for (const std::string& in : inputs_) {
    const std::string name = fs::path(in).filename();
    RunResult alone = sh("HOME=" + quote(dir_ + "/home-one") + " " + pdfix() + " fix -q --store " +
                         quote(in) + " " + quote(dir_ + "/one/" + name));
    ASSERT_EQ(alone.status, 0) << alone.err;
    EXPECT_TRUE(same_file(dir_ + "/many/" + name, dir_ + "/one/" + name)) << name;
    EXPECT_GT(perf_stats(dir_ + "/many/" + name)["SAMPLE"], 0U) << name;
  }
  const std::set<std::string> many = tree_of(dir_ + "/home-many/.debug");
  EXPECT_GT(many.size(), 20U);
  EXPECT_EQ(many, tree_of(dir_ + "/home-one/.debug"));
}

TEST_F(FixManyTest, OneThatCannotBeReadIsReportedAndTheOthersAreFixed) {
  std::ofstream(dir_ + "/in/broken.data") << "PERFILE2 and nothing a perf.data has";
  inputs_.insert(inputs_.begin() + 1, dir_ + "/in/broken.data");
  RunResult r = sh(pdfix() + " fix " + inputs() + quote(dir_ + "/many"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("3 fixed, 0 with something missing, 1 not fixed"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/many/broken.data"));
  for (const std::string name : {"a.data", "b.data", "c.data"}) {
    EXPECT_TRUE(fs::exists(dir_ + "/many/" + name)) << name;
  }
  // --json: its line says why, as stderr does.
  fs::remove_all(dir_ + "/many");
  fs::create_directories(dir_ + "/many");
  r = sh(pdfix() + " fix --json " + inputs() + quote(dir_ + "/many"));
  EXPECT_EQ(r.status, 2) << r.err;
  std::istringstream lines(r.out);
  std::string second;
  std::getline(lines, second);
  std::getline(lines, second);
  const llvm::json::Object broken = parse_object(second);
  EXPECT_EQ(broken.getInteger("status"), 2) << second;
  const std::string error = broken.getString("error").value_or("").str();
  EXPECT_FALSE(error.empty()) << second;
  EXPECT_NE(r.err.find(error), std::string::npos) << error << "\n" << r.err;
}

TEST_F(FixManyTest, WhatWouldMakeTwoOutputsOneOrBundleSeveralIsRefusedFirst) {
  fs::create_directories(dir_ + "/in/again");
  fs::copy_file(inputs_[0], dir_ + "/in/again/a.data");
  RunResult r =
      sh(pdfix() + " fix " + inputs() + quote(dir_ + "/in/again/a.data") + " " + dir_ + "/many");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("two recordings are named a.data"), std::string::npos) << r.err;
  r = sh(pdfix() + " fix --archive " + quote(dir_ + "/b.tar") + " " + inputs() + dir_ + "/many");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--archive makes one bundle a recording"), std::string::npos) << r.err;
  r = sh(pdfix() + " fix " + inputs() + quote(dir_ + "/many/out.data"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is none"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(dir_ + "/many"));
}

}  // namespace
}  // namespace pdfix::e2e
