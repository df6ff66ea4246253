// What a test of pdfix export stands on: a C program built -O2 -g whose hot function is inlined
// into two callers, recorded by the machine's perf with frame-pointer callchains (-g) and without
// a build-id cache (-B), in a directory (and HOME) of the test's own.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

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

// Flat samples by function, from `go tool pprof -top` (flat flat% sum% cum cum% name).
inline std::map<std::string, uint64_t> pprof_flat(const std::string& top) {
  std::map<std::string, uint64_t> out;
  std::istringstream lines(top);
  bool table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("flat%") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream f(line);
    uint64_t flat = 0;
    std::string pct, sum, cum, cum_pct, name;
    if (!(f >> flat >> pct >> sum >> cum >> cum_pct)) continue;
    std::getline(f >> std::ws, name);
    if (flat > 0) out[name] += flat;
  }
  return out;
}

// Samples by symbol, from `perf report --sort sym -F sample,sym` ("  N  [k] name").
inline std::map<std::string, uint64_t> perf_by_symbol(const std::string& report) {
  std::map<std::string, uint64_t> out;
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    uint64_t n = 0;
    std::string mode, name;
    if (!(f >> n >> mode) || mode.size() != 3 || mode[0] != '[') continue;
    std::getline(f >> std::ws, name);
    out[name] += n;
  }
  return out;
}

// Of perf's samples by function, how many pprof's name alike (each function counted up to the
// smaller of the two), and perf's total.
inline std::pair<uint64_t, uint64_t> named_alike(const std::map<std::string, uint64_t>& perfs,
                                                 const std::map<std::string, uint64_t>& ours) {
  uint64_t agree = 0;
  uint64_t total = 0;
  for (const auto& [name, n] : perfs) {
    total += n;
    auto it = ours.find(name);
    agree += it == ours.end() ? 0 : std::min(n, it->second);
  }
  return {agree, total};
}

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
