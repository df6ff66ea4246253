// The systemd unit of docs/follow.md, run as systemd runs it where there is no systemd to run it
// (this machine kind's PID 1 is not systemd): its ExecStart line, its stdout appended to its
// StandardOutput file, restarted when it dies (Restart=on-failure), stopped by its KillSignal. The
// unit is read from the page, so the page and the test cannot part.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "e2e/follow_fixture.h"
#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// The [Service] settings of the unit docs/follow.md shows, by name.
std::map<std::string, std::string> unit_in_docs() {
  std::ifstream page(source_dir() + "/docs/follow.md");
  std::map<std::string, std::string> settings;
  bool service = false;
  for (std::string line; std::getline(page, line);) {
    const std::string text = line.starts_with("    ") ? line.substr(4) : "";
    if (text.starts_with("[")) service = text == "[Service]";
    const size_t eq = text.find('=');
    if (service && eq != std::string::npos) settings[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return settings;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

using FollowServiceTest = FollowChunksTest;

TEST_F(FollowServiceTest, TheUnitInTheDocsSurvivesACrashAndStopsWithItsSummary) {
  std::map<std::string, std::string> unit = unit_in_docs();
  ASSERT_TRUE(unit.count("ExecStart") && unit.count("StandardOutput") && unit.count("KillSignal"))
      << "docs/follow.md shows no unit with ExecStart, StandardOutput and KillSignal";
  EXPECT_EQ(unit["Restart"], "on-failure");
  ASSERT_TRUE(unit["StandardOutput"].starts_with("append:"));
  // The unit's paths, under the test's directory.
  std::string command = unit["ExecStart"];
  command = replaced(command, "/usr/local/bin/pdfix", pdfix());
  command = replaced(command, "/var/lib/perf/chunks", quote(dir_ + "/raw"));
  command = replaced(command, "/var/lib/perf/fixed", quote(dir_ + "/out"));
  const std::string log = replaced(unit["StandardOutput"].substr(7), "/var/log", dir_);
  ASSERT_NE(command.find(dir_ + "/raw"), std::string::npos) << command;
  ASSERT_NE(log.find(dir_), std::string::npos) << log;
  // systemd's part: a run that dies is started again; one that exits after the stop is not.
  const std::string service = background_->start(
      "sh -c " + quote("while :; do " + store_env_ + command + " >>" + quote(log) +
                       "; rc=$?; echo $rc >>" + quote(dir_ + "/exits") +
                       "; [ $rc -gt 128 ] || break; done"),
      "service.log");
  make_chunks(2);
  ASSERT_TRUE(within_a_minute([&] { return journal_lines(dir_ + "/out") == 2; }));
  // A crash: SIGKILL. Chunks that come meanwhile are fixed by the run started again.
  ASSERT_EQ(sh("pkill -KILL -P " + service).status, 0);
  make_chunks(2, 2);
  ASSERT_TRUE(within_a_minute([&] { return journal_lines(dir_ + "/out") == 4; }))
      << sh("cat " + quote(dir_ + "/exits")).out;
  const std::string signal = unit["KillSignal"];
  ASSERT_EQ(sh("pkill -" + signal.substr(3) + " -P " + service + "; while kill -0 " + service +
               " 2>/dev/null; do sleep 0.1; done")
                .status,
            0);
  // Killed once (137), then stopped: done (these chunks, recorded elsewhere, name binaries this
  // host does not have: 3, with something missing), and not started again.
  const std::string exits = sh("cat " + quote(dir_ + "/exits")).out;
  EXPECT_TRUE(exits == "137\n0\n" || exits == "137\n3\n") << exits;
  // The appended log is JSON from end to end, as jq reads it; its last line the second run's
  // summary, saying how it stopped.
  RunResult jq = sh("jq -c 'if .summary then .summary.stopped_by else .chunk end' " + quote(log));
  EXPECT_EQ(jq.status, 0) << jq.err;
  std::istringstream said(jq.out);
  std::vector<std::string> values;
  for (std::string line; std::getline(said, line);) values.push_back(line);
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(values.back(), "\"" + signal + "\"") << jq.out;
  EXPECT_EQ(values.size(), 5u) << jq.out;  // four chunks, once each, and the summary
  // --remove-raw: the raw chunks went once their fixed copies were on disk.
  EXPECT_TRUE(chunks_in(dir_ + "/raw").empty());
  EXPECT_EQ(chunks_in(dir_ + "/out").size(), 4u);
}

// A service's reader may see follow killed at any moment (the unit's stop, the OOM killer): each
// JSON line leaves follow in one write(2), so no kill leaves half of one. A system-wide chunk's
// line is tens of KiB, several of a stream buffer's flushes (which is how a SIGKILL once left a
// line cut at 32 KiB in the soak test's log).
TEST_F(FollowServiceTest, EachJsonLineIsOneWriteSoAKillNeverCutsOne) {
  PDFIX_NEEDS_PERF_RECORD();
  ASSERT_EQ(sh("command -v strace").status, 0) << "strace is missing: scripts/setup.sh installs it";
  // A hundred programs, each at a path of its own: a hundred maps in fix's report, whatever else
  // the machine runs meanwhile.
  RunResult r = sh("mkdir -p " + quote(dir_ + "/bin") + " && for i in $(seq 100); do cp " +
                   "/bin/true " + quote(dir_ + "/bin") + "/true$i; done");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh("perf record -q -a -o " + quote(dir_ + "/raw/perf.data.2026113012000010") + " -- sh -c " +
         quote("for i in $(seq 100); do " + dir_ + "/bin/true$i; done"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string writes = dir_ + "/writes";
  r = sh(store_env_ + "strace -f -qq -e trace=write -e signal=none -o " + quote(writes) + " " +
         pdfix() + " follow --once --json " + quote(dir_ + "/raw") + " " + quote(dir_ + "/out"));
  // 3: a process of the machine's (another test's node) whose jitdump is gone.
  ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
  std::vector<size_t> lines;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line);) lines.push_back(line.size() + 1);
  ASSERT_EQ(lines.size(), 2u) << r.out;  // the chunk's, then the summary
  EXPECT_GT(lines[0], 16384u) << "a line within one buffer shows nothing";
  // strace's lines for stdout: `PID write(1, "..."..., ASKED) = WRITTEN`.
  std::vector<size_t> written;
  std::ifstream trace(writes);
  for (std::string line; std::getline(trace, line);) {
    const size_t call = line.find("write(1, ");
    const size_t result = line.rfind(") = ");
    if (call == std::string::npos || result == std::string::npos) continue;
    written.push_back(std::stoul(line.substr(result + 4)));
  }
  EXPECT_EQ(written, lines);
}

}  // namespace
}  // namespace pdfix::e2e
