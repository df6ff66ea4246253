// pdfix follow beside the other ways perf switches chunks: DWARF stacks unwound as each chunk is
// fixed (`--call-graph dwarf`, `follow --unwind`), the flight recorder (`--overwrite`, a chunk at
// each SIGUSR2, its maps written at its end) and perf removing the oldest chunks itself
// (`--switch-max-files 3`), Debian sid's perf (7.2 today), which writes build-ids into its
// maps itself, and a `perf daemon` session (a flight recorder in the daemon's directory, a chunk
// at each `perf daemon signal`). Each against a real system-wide `perf record`, a program of this
// test's running in it; every chunk perf finished is fixed (or, removed by perf first, said to be
// gone), and every map of the program carries its id.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "e2e/follow_fixture.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

struct Mode {
  std::string name;
  std::string record;   // perf record's options beyond -a -o
  std::string follow;   // follow's beyond --json --store
  bool by_signal;       // chunks switched by SIGUSR2, not by time
  bool sid = false;     // recorded by Debian sid's perf, not this machine's
  bool daemon = false;  // recorded by a `perf daemon` session, not a perf record of the test's
};
void PrintTo(const Mode& m, std::ostream* os) { *os << m.name; }

class FollowModesTest : public FollowFixture<::testing::TestWithParam<Mode>> {
 protected:
  void stop(const std::string& pid) {
    ASSERT_EQ(sh("kill -INT " + pid + "; while kill -0 " + pid + " 2>/dev/null; do sleep 0.1; done")
                  .status,
              0);
  }
};

TEST_P(FollowModesTest, EveryChunkPerfFinishedIsFixedAndItsProgramsMapsCarryTheirId) {
  PDFIX_NEEDS_PERF_RECORD();
  const Mode& mode = GetParam();
  const std::string app = dir_ + "/app/app";
  build_app(dir_ + "/app", "1");
  const std::string id = own_id(app);
  const std::string home = "env HOME=" + quote(dir_) + " ";
  // A daemon's session records in BASE/session-NAME, its perf's output to a file there.
  const std::string raw = mode.daemon ? dir_ + "/daemon/session-s" : dir_ + "/raw";
  const std::string daemon = "perf daemon --config " + quote(dir_ + "/daemon.conf") + " ";
  fs::create_directories(raw);
  const std::string follow =
      background_->start(home + pdfix() + " follow --json --store " + mode.follow + " " +
                             quote(raw) + " " + quote(dir_ + "/out"),
                         "follow.jsonl");
  const std::string recorder = mode.sid ? perf_sid_command() : "perf";
  ASSERT_NE(recorder, "");
  std::string perf;
  if (mode.daemon) {
    std::ofstream(dir_ + "/daemon.conf") << "[daemon]\nbase = " << dir_ << "/daemon\n"
                                         << "[session-s]\nrun = -a " << mode.record << "\n";
    perf = background_->start(daemon + "start --foreground", "perf.log");
  } else {
    perf = background_->start(
        recorder + " record -a " + mode.record + " -o " + quote(raw + "/perf.data"), "perf.log");
  }
  ASSERT_EQ(sh("for i in $(seq 100); do [ -e " + quote(raw + "/perf.data") +
               " ] && exit 0; sleep 0.1; done; exit 1")
                .status,
            0)
      << "perf did not start";
  // The program runs eight times, about a second apart: six or more chunks of a second. The
  // flight recorder is told to write a chunk after the third and the sixth run.
  for (int i = 1; i <= 8; ++i) {
    RunResult r = sh("sleep 0.8; " + quote(app));
    ASSERT_LE(r.status, 1) << r.err;  // main returns s == 42
    if (mode.by_signal && i % 3 == 0) {
      sh((mode.daemon ? daemon + "signal --session s" : "kill -USR2 " + perf) + "; sleep 0.5");
    }
  }
  if (mode.daemon) {
    ASSERT_EQ(sh(daemon + "stop").status, 0);
    ASSERT_EQ(sh("while kill -0 " + perf + " 2>/dev/null; do sleep 0.1; done").status, 0);
  } else {
    stop(perf);
  }
  // perf names each chunk it finished ("Dump"), the last at its exit included.
  const std::string perf_said =
      sh("cat " + quote(mode.daemon ? raw + "/output" : dir_ + "/perf.log.err")).out;
  size_t dumped = 0;
  for (size_t at = perf_said.find("Dump "); at != std::string::npos;
       at = perf_said.find("Dump ", at + 1)) {
    ++dumped;
  }
  ASSERT_GE(dumped, 2u) << perf_said;
  // Signalled twice, the flight recorder wrote a chunk each time and one at its end.
  if (mode.by_signal) {
    EXPECT_EQ(dumped, 3u) << perf_said;
  }
  // follow takes the last chunk, then stops at SIGINT with its summary.
  for (int i = 0; i < 600; ++i) {
    if (sh("grep -c . " + quote(dir_ + "/out/.pdfix-follow-journal")).out ==
        std::to_string(dumped) + "\n") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop(follow);

  std::istringstream lines(sh("cat " + quote(dir_ + "/follow.jsonl")).out);
  std::vector<llvm::json::Object> chunks;
  std::optional<llvm::json::Object> summary;
  for (std::string line; std::getline(lines, line);) {
    llvm::json::Object o = parse_object(line);
    if (const llvm::json::Object* s = o.getObject("summary")) {
      summary = *s;
    } else {
      chunks.push_back(std::move(o));
    }
  }
  ASSERT_TRUE(summary.has_value()) << sh("cat " + quote(dir_ + "/follow.jsonl.err")).out;
  // A system-wide recording takes other tests' processes too: a jitdump of theirs gone makes a
  // chunk incomplete, rightly. None is left unfixed. Only where perf removes chunks may one be
  // gone before follow took it (follow more than three chunks behind, on a loaded machine), and
  // then it is said to be.
  const bool removes = mode.name == "max_files";
  EXPECT_EQ(int_of(*summary, "fixed") + int_of(*summary, "incomplete") +
                (removes ? int_of(*summary, "gone") : 0),
            static_cast<int64_t>(dumped))
      << perf_said;
  EXPECT_EQ(int_of(*summary, "not_fixed"), 0)
      << sh("cat " + quote(dir_ + "/follow.jsonl") + " " + quote(dir_ + "/follow.jsonl.err")).out;
  if (!removes) {
    EXPECT_EQ(int_of(*summary, "gone"), 0);
  }
  if (removes) {
    // perf did remove the oldest: three chunks are left of more.
    EXPECT_GT(dumped, 3u) << perf_said;
    EXPECT_LE(std::distance(fs::directory_iterator(raw), fs::directory_iterator{}), 3)
        << sh("ls " + quote(raw)).out;
  }

  size_t maps = 0;
  size_t unwound = 0;
  uint64_t raw_bytes = 0;
  uint64_t out_bytes = 0;
  for (const llvm::json::Object& chunk : chunks) {
    const std::string name = chunk.getString("chunk").value_or("").str();
    const std::string out = dir_ + "/out/" + name;
    ASSERT_TRUE(fs::exists(out)) << name;
    if (fs::exists(raw + "/" + name)) {
      raw_bytes += fs::file_size(raw + "/" + name);
      out_bytes += fs::file_size(out);
    }
    for (const MapRecord& m : maps_of(out)) {
      if (m.filename != app) continue;
      EXPECT_EQ(m.build_id, id) << name << " pid " << m.pid;
      ++maps;
    }
    const llvm::json::Object* fix = chunk.getObject("fix");
    const llvm::json::Object* unwind = fix != nullptr ? fix->getObject("unwind") : nullptr;
    if (unwind != nullptr) unwound += int_of(*unwind, "samples");
  }
  EXPECT_GE(maps, 1u) << "no chunk maps the program";
  if (mode.sid) {
    // The perf that recorded the chunks reads each fixed one (in its own root, beside its own
    // addr2line), and names the program's function from the store. The report shows the samples'
    // own symbols only: with callchains and their inline frames, perf 7 asked addr2line about
    // every entry, 18 of this test's 31 s on a quiet machine (and the test took 99 s in CI).
    bool named = false;
    for (const llvm::json::Object& chunk : chunks) {
      const std::string name = chunk.getString("chunk").value_or("").str();
      RunResult r = in_sid_root(
          dir_, "HOME=/b perf report --stdio --sort sym -g none --no-inline -i /b/out/" + name);
      EXPECT_EQ(r.status, 0) << name << "\n" << r.err;
      named |= r.out.find("spin_v1") != std::string::npos;
    }
    EXPECT_TRUE(named) << "perf 7 named spin_v1 in no chunk";
  }
  if (mode.name == "dwarf") {
    EXPECT_GT(unwound, 0u) << "no sample unwound";
    // The 8 KiB stack copies are gone, each replaced by its callchain.
    EXPECT_LT(out_bytes, raw_bytes / 2) << out_bytes << " bytes fixed of " << raw_bytes;
    // perf reads the unwound callchains: the program's function called by main.
    bool called_by_main = false;
    for (const llvm::json::Object& chunk : chunks) {
      const std::string out = dir_ + "/out/" + chunk.getString("chunk").value_or("").str();
      const std::string script =
          sh(home + "perf script -F comm,ip,sym -i " + quote(out) + " 2>/dev/null").out;
      std::istringstream samples(script);
      std::string sample;
      for (std::string line; std::getline(samples, line);) {
        if (!line.empty()) {
          sample += line + "\n";
          continue;
        }
        const size_t spin = sample.find("spin_v1");
        called_by_main |=
            spin != std::string::npos && sample.find("main", spin) != std::string::npos;
        sample.clear();
      }
    }
    EXPECT_TRUE(called_by_main) << "no sample in spin_v1 unwound up to main";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Perf, FollowModesTest,
    ::testing::Values(
        Mode{"dwarf", "-F 199 --call-graph dwarf,8192 --switch-output=2s", "--unwind", false},
        Mode{"overwrite", "-g -F 499 --overwrite --switch-output", "", true},
        Mode{"max_files", "-g -F 499 --switch-output=1s --switch-max-files 3", "", false},
        Mode{"perf7", "-g -F 499 --switch-output=1s", "", false, true},
        Mode{"daemon", "-g -F 499 --overwrite --switch-output", "", true, false, true}),
    [](const ::testing::TestParamInfo<Mode>& info) { return info.param.name; });

}  // namespace
}  // namespace pdfix::e2e
