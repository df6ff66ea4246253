// A program rebuilt at its path (ld rewrites its output in place: one inode, two contents) between
// two runs inside one chunk of `perf record --switch-output`, under pdfix follow --store: the
// chunks of one build's runs carry that build's id, and in the chunk of both no map carries the
// other build's. The store follow filled while that chunk was recorded holds the first build at
// the path, made then; it is pdfix's own entry, not perf's reading of the path, and proves
// nothing of the chunk.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "e2e/follow_fixture.h"
#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {

using FollowRebuildTest = FollowFixture<::testing::Test>;

TEST_F(FollowRebuildTest, TheChunkOfBothBuildsCarriesNeitherBuildsIdForTheOthers) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string app = dir_ + "/app/app";
  build_app(dir_ + "/app", "1");
  const std::string v1 = own_id(app);
  const std::string env = "env HOME=" + quote(dir_) + " ";
  const std::string follow = background_->start(
      env + pdfix() + " follow --json --store " + quote(dir_ + "/raw") + " " + quote(dir_ + "/out"),
      "follow.jsonl");
  // Chunks end when the test says (SIGUSR2), not by the clock: the rebuild falls in the second.
  const std::string perf = background_->start(
      "perf record -a -g -F 499 --switch-output=signal -o " + quote(dir_ + "/raw/perf.data"),
      "perf.log");
  RunResult r = sh("i=0; while [ ! -e " + quote(dir_ + "/raw/perf.data") +
                   " ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.5");
  const auto runs = [&](const std::string& pids) {
    r = sh("for i in 1 2 3; do " + quote(app) + " & echo $! >>" + quote(dir_ + "/" + pids) +
           "; wait $!; sleep 0.2; done");
    ASSERT_EQ(r.status, 0) << r.err;
  };
  const auto next_chunk = [&](size_t n) {
    r = sh("kill -USR2 " + perf + "; i=0; while [ $(ls " + quote(dir_ + "/raw") +
           " | grep -c 'perf.data.') -lt " + std::to_string(n) +
           " ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done");
  };
  runs("pids1");
  next_chunk(1);
  // follow stores the first chunk's binaries while perf writes the second.
  r = sh("i=0; until grep -q . " + quote(dir_ + "/out/.pdfix-follow-journal") +
         " 2>/dev/null || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done");
  runs("pids1");
  build_app(dir_ + "/app", "2");
  const std::string v2 = own_id(app);
  ASSERT_NE(v1, v2);
  runs("pids2");
  next_chunk(2);
  runs("pids2");
  r = sh("kill -INT " + perf + "; while kill -0 " + perf + " 2>/dev/null; do sleep 0.1; done");
  const std::vector<std::string> chunks = chunks_in(dir_ + "/raw");
  ASSERT_EQ(chunks.size(), 3u) << sh("cat " + quote(dir_ + "/perf.log.err")).out;
  r = sh("i=0; until [ $(grep -c ' ' " + quote(dir_ + "/out/.pdfix-follow-journal") +
         ") -ge 3 ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; kill -INT " + follow +
         "; while kill -0 " + follow + " 2>/dev/null; do sleep 0.1; done");
  ASSERT_EQ(r.status, 0) << r.err;

  const std::set<uint32_t> pids1 = pids_in(dir_ + "/pids1");
  const std::set<uint32_t> pids2 = pids_in(dir_ + "/pids2");
  // By chunk, the program's maps: build run -> ids carried ("" none).
  std::vector<std::map<std::string, std::multiset<std::string>>> carried(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const MapRecord& m : maps_of(dir_ + "/out/" + chunks[c])) {
      if (m.filename != app) continue;
      const std::string ran = pids1.count(m.pid) ? v1 : pids2.count(m.pid) ? v2 : "";
      ASSERT_NE(ran, "") << "a map of the program by pid " << m.pid << ", which no run had";
      carried[c][ran].insert(m.build_id);
    }
  }
  const auto all = [](const std::multiset<std::string>& ids, const std::string& id) {
    return !ids.empty() && ids.count(id) == ids.size();
  };
  EXPECT_TRUE(all(carried[0][v1], v1)) << chunks[0];
  EXPECT_TRUE(all(carried[2][v2], v2)) << chunks[2];
  // The chunk of both: each build's maps carry that build's id or none, never the other's.
  ASSERT_EQ(carried[1][v1].size(), 3u);
  ASSERT_EQ(carried[1][v2].size(), 3u);
  EXPECT_EQ(carried[1][v1].count(v2), 0u) << chunks[1];
  EXPECT_EQ(carried[1][v2].count(v1), 0u) << chunks[1] << ": the second build's maps were given "
                                          << "the first build's id, stored by follow meanwhile";
  // Both builds in the store, each once.
  r = sh("find " + quote(dir_ + "/.debug" + app) + " -name elf | wc -l");
  EXPECT_EQ(r.out, "2\n") << sh("find " + quote(dir_ + "/.debug")).out;
}

}  // namespace
}  // namespace pdfix::e2e
