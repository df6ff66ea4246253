// pdfix follow --export: every chunk of a real `perf record -g --switch-output` gets a profile
// beside its fixed copy, which go tool pprof reads (its names pdfix's: -symbolize=none), its
// program's function named in every chunk (the symbolizer's binaries kept from chunk to chunk),
// and its total perf's sample count of the fixed chunk.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "e2e/follow_fixture.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr char kSpin[] = R"(#include <time.h>
__attribute__((noinline)) double spin_in_chunks(double x) {
  for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
  return x;
}
int main(void) {
  double x = 1;
  time_t end = time(0) + 4;
  while (time(0) < end) x = spin_in_chunks(x);
  return x < 0;
}
)";

using FollowExportTest = FollowChunksTest;

TEST_F(FollowExportTest, EveryChunkHasItsProfileNamedAndCountedAsPerfCountsIt) {
  PDFIX_NEEDS_PERF_RECORD();
  std::ofstream(dir_ + "/spin.c") << kSpin;
  RunResult r = sh("gcc -O2 -g -fno-omit-frame-pointer -o " + quote(dir_ + "/spin") + " " +
                   quote(dir_ + "/spin.c"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(store_env_ + "perf record -q -g --switch-output=1s -o " + quote(dir_ + "/raw/perf.data") +
         " " + quote(dir_ + "/spin") + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<std::string> chunks = chunks_in(dir_ + "/raw");
  ASSERT_GE(chunks.size(), 3u) << r.out;

  const std::string profiles = dir_ + "/profiles";
  fs::create_directories(profiles);
  r = once("--export " + quote(profiles));
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto lines = lines_of(r.out);
  int named = 0;
  for (const std::string& chunk : chunks) {
    const std::string profile = profiles + "/" + chunk + ".pb.gz";
    ASSERT_TRUE(fs::exists(profile)) << chunk << "\n" << r.out;
    EXPECT_EQ((fs::status(profile).permissions() & fs::perms::all),
              fs::perms::owner_read | fs::perms::owner_write);
    const llvm::json::Object* exported =
        lines.at(chunk)[0].getObject("fix") != nullptr
            ? lines.at(chunk)[0].getObject("fix")->getObject("export")
            : nullptr;
    ASSERT_NE(exported, nullptr) << r.out;
    const uint64_t samples = perf_stats(dir_ + "/out/" + chunk)["SAMPLE"];
    EXPECT_EQ(exported->getInteger("samples").value_or(-1), static_cast<int64_t>(samples));
    const RunResult top = sh("HOME=" + quote(dir_) + " go tool pprof -symbolize=none -top " +
                             quote(profile) + " 2>&1");
    ASSERT_EQ(top.status, 0) << top.out;
    std::smatch total;
    ASSERT_TRUE(std::regex_search(top.out, total, std::regex(R"(of (\d+) total)"))) << top.out;
    EXPECT_EQ(std::stoull(total[1]), samples) << top.out;
    named += top.out.find("spin_in_chunks") != std::string::npos;
  }
  // The program spins through every chunk but the last, which may hold only its exit.
  EXPECT_GE(named, static_cast<int>(chunks.size()) - 1) << r.out;

  // --export's directory must not be the chunks'.
  r = once("--export " + quote(dir_ + "/raw"));
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace pdfix::e2e
