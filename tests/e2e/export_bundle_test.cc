// pdfix export of a recording's bundle, unpacked where the recording's program is not (moved
// away, or rebuilt) and the test's own HOME holds no cache of it: `--buildid-dir DIR/.debug` names
// the frames as perf names them from the same bundle (perf --buildid-dir, and --symfs for a
// program without a build-id), and --strict says whether every sampled binary was read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "e2e/export_fixture.h"
#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

TEST_F(ExportTest, AnUnpackedBundleNamesItsFramesAsPerfDoesFromIt) {
  const std::string fixed = dir_ + "/fixed.data";
  const std::string bundle = dir_ + "/run.tar.zst";
  const std::string un = dir_ + "/unpacked";
  ASSERT_EQ(pdfix_run("fix -q " + quote(dir_ + "/in.data") + " " + quote(fixed)).status, 0);
  ASSERT_EQ(pdfix_run("archive -q " + quote(fixed) + " " + quote(bundle)).status, 0);
  ASSERT_EQ(pdfix_run("unpack " + quote(bundle) + " " + quote(un) + " >/dev/null").status, 0);
  fs::rename(dir_ + "/hot", dir_ + "/hot.away");

  // Without the bundle's cache the program is nowhere: its frames stay unnamed, and --strict
  // says so.
  RunResult r = pdfix_run("export -q --strict " + quote(un + "/perf.data") + " " +
                          quote(dir_ + "/without.pb.gz"));
  EXPECT_EQ(r.status, 3) << r.err;

  const std::string out = dir_ + "/bundle.pb.gz";
  r = pdfix_run("export -q --strict --buildid-dir " + quote(un + "/.debug") + " " +
                quote(un + "/perf.data") + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  r = pprof("-top -noinlines -nodecount=1000000 -nodefraction=0 -edgefraction=0", out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(r.out.starts_with("File: hot\n")) << r.out;
  const std::map<std::string, uint64_t> ours = pprof_flat(r.out);
  EXPECT_GT(ours.count("left_caller") + ours.count("right_caller"), 1u) << r.out;
  r = sh(env_ + "perf --buildid-dir " + quote(un + "/.debug") + " report -i " +
         quote(un + "/perf.data") +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  const std::map<std::string, uint64_t> perfs = perf_by_symbol(r.out);
  const auto [agree, total] = named_alike(perfs, ours);
  ASSERT_GT(total, 0u);
  EXPECT_GE(agree * 100, total * 99) << agree << " of " << total << " samples named alike\n"
                                     << r.out;
}

// A Go program (no GNU build-id) is kept in the bundle by path and content (DIR/symfs): unpacked
// after the program was rebuilt at its path, export names its frames from the kept copy, as perf
// does with --symfs, and nothing from the new file.
TEST_F(ExportTest, AnUnpackedBundlesGoProgramIsNamedFromTheCopyItKeeps) {
  const std::string program = dir_ + "/gofib";
  build_go_fib(program, "7");
  ASSERT_EQ(own_id(program), "");
  const std::string in = dir_ + "/go.data";
  RunResult r =
      sh(env_ + "perf record -q -B -g -o " + quote(in) + " " + quote(program) + " 35 >/dev/null");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string bundle = dir_ + "/go.tar.zst";
  const std::string un = dir_ + "/go.unpacked";
  ASSERT_EQ(pdfix_run("fix -q " + quote(in) + " " + quote(dir_ + "/go.fixed")).status, 0);
  ASSERT_EQ(pdfix_run("archive -q " + quote(dir_ + "/go.fixed") + " " + quote(bundle)).status, 0);
  ASSERT_EQ(pdfix_run("unpack " + quote(bundle) + " " + quote(un) + " >/dev/null").status, 0);
  ASSERT_TRUE(fs::exists(un + "/symfs/0" + program));
  build_go_fib(program, "8");

  r = pdfix_run("export -q --strict --format folded --buildid-dir " + quote(un + "/.debug") + " " +
                quote(un + "/perf.data") + " -");
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, uint64_t> leaves;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string stack = line.substr(0, line.rfind(' '));
    leaves[stack.substr(stack.rfind(';') + 1)] += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(leaves.count("main.fib_v8"), 0u) << r.out;
  r = sh(env_ + "perf --buildid-dir " + quote(un + "/.debug") + " report -i " +
         quote(un + "/perf.data") + " --symfs " + quote(un + "/symfs/0") +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  const uint64_t perfs = perf_by_symbol(r.out)["main.fib_v7"];
  EXPECT_GT(perfs, 0u) << r.out;
  EXPECT_EQ(leaves["main.fib_v7"], perfs);
}

}  // namespace
}  // namespace pdfix::e2e
