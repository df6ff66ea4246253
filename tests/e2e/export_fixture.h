// What a test of pdfix export stands on: a C program built -O2 -g whose hot function is inlined
// into two callers, recorded by the machine's perf with frame-pointer callchains (-g) and without
// a build-id cache (-B), in a directory (and HOME) of the test's own.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {

inline constexpr char kProgram[] = R"(#include <stdio.h>
static inline __attribute__((always_inline)) double hot_kernel(double x, int n) {
  for (int i = 0; i < n; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
  return x;
}
__attribute__((noinline)) double left_caller(int n) { return hot_kernel(1.0, n); }
__attribute__((noinline)) double right_caller(int n) { return hot_kernel(2.0, n) * 2; }
int main(int argc, char** argv) {
  volatile int n = 3000000;
  double s = 0;
  for (int r = 0; r < 60; r++) s += left_caller(n + argc) + right_caller(n - argc);
  printf("%f\n", s);
  return 0;
}
)";

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
    dir_ = temp_dir();
    std::filesystem::create_directories(dir_ + "/home");
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
    std::ofstream(dir_ + "/hot.c") << kProgram;
    RunResult r = sh("gcc -O2 -g -fno-omit-frame-pointer -o " + quote(dir_ + "/hot") + " " +
                     quote(dir_ + "/hot.c"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh(env_ + "perf record -q -B -g -o " + quote(dir_ + "/in.data") + " " +
           quote(dir_ + "/hot") + " >/dev/null");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override { remove_test_dir(dir_); }

  RunResult pdfix_run(const std::string& args) { return sh(env_ + pdfix() + " " + args); }
  // go tool pprof's output for `args`, read from `profile` with nothing symbolized by pprof.
  RunResult pprof(const std::string& args, const std::string& profile) {
    return sh("HOME=" + quote(dir_ + "/home") + " go tool pprof -symbolize=none " + args + " " +
              quote(profile) + " 2>&1");
  }

  std::string dir_;
  std::string env_;
};

}  // namespace pdfix::e2e
