// pdfix follow for a thousand chunks, as #71 asks a run of days to be judged in little time: a
// real `perf record -a -F 4000 --switch-output=16K` (perf 6.1 switches by size, not by less than a
// second) while short processes come and go and a podman container (runtime runc) is started and
// removed twice; follow with --store --remove-raw, killed by SIGKILL twice and started again.
// Every chunk perf wrote is fixed once, none is left raw, and follow's RSS, descriptors, journal
// and CPU a chunk, sampled along the run, stay flat.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "e2e/follow_fixture.h"
#include "e2e/harness.h"
#include "e2e/podman_fixture.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr size_t kChunks = 1000;

// One look at follow: what it holds and has spent, and how far it is.
struct Sample {
  size_t chunks = 0;  // fixed so far, by all runs
  double rss_mib = 0;
  size_t fds = 0;
  uint64_t journal_bytes = 0;
  double cpu_seconds = 0;  // this run's
};

std::optional<Sample> look_at(const std::string& pid, const std::string& out) {
  Sample s;
  std::ifstream status("/proc/" + pid + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) s.rss_mib = std::stod(line.substr(6)) / 1024;
  }
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (s.rss_mib == 0 || close == std::string::npos) return std::nullopt;
  // After the command's name: state is field 3; utime and stime are fields 14 and 15.
  const std::vector<std::string> fields = absl::StrSplit(text.substr(close + 2), ' ');
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return std::nullopt;
  }
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + pid + "/fd", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    ++s.fds;
  }
  s.journal_bytes = fs::file_size(out + "/.pdfix-follow-journal", ec);
  for (const auto& e : fs::directory_iterator(out)) {
    s.chunks += e.path().filename().string().starts_with("perf.data.");
  }
  return s;
}

class PodmanFollowSoakTest : public PodmanFixture {
 protected:
  void TearDown() override {
    background_.reset();
    PodmanFixture::TearDown();
  }
  std::optional<Background> background_;
};

TEST_F(PodmanFollowSoakTest, AThousandChunksTwoKillsAndAContainerEachChunkFixedOnceAndAllFlat) {
  make_base("libc6");
  const std::string raw = dir_ + "/raw";
  const std::string out = dir_ + "/out";
  for (const std::string& d : {raw, out, dir_ + "/sync"}) fs::create_directories(d);
  background_.emplace(dir_);
  const auto start_follow = [&](int run) {
    return background_->start("env " + env_ + pdfix() + " follow --json --store --remove-raw " +
                                  quote(raw) + " " + quote(out),
                              "follow" + std::to_string(run) + ".jsonl");
  };
  std::string follow = start_follow(0);
  ASSERT_TRUE(within_a_minute([&] { return fs::exists(out + "/.pdfix-follow-journal"); }));
  // Short processes until told to stop; perf says "Dump <chunk>" for each chunk it finishes.
  const std::string stop = dir_ + "/sync/stop";
  const std::string perf = background_->start(
      "perf record -a -F 4000 --switch-output=16K -o " + quote(raw + "/perf.data") + " -- sh -c " +
          quote("while [ ! -e " + quote(stop) +
                " ]; do ls -R /usr/lib >/dev/null; gzip -c /etc/services >/dev/null; done"),
      "perf.log");

  std::vector<std::vector<Sample>> runs(1);
  size_t next_kill = kChunks / 3;
  bool container_up = false;
  size_t next_container = kChunks / 6;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << (runs.back().empty() ? 0 : runs.back().back().chunks) << " chunks fixed in 4 minutes";
    const std::optional<Sample> s = look_at(follow, out);
    ASSERT_TRUE(s.has_value()) << "follow is gone: "
                               << sh("cat " + quote(dir_ + "/follow" +
                                                    std::to_string(runs.size() - 1) + ".jsonl.err"))
                                      .out;
    runs.back().push_back(*s);
    if (s->chunks >= kChunks) break;
    if (s->chunks >= next_container) {
      // Started (a process of its own coming and going in the container) or removed.
      const RunResult r = container_up
                              ? sh("podman rm -f -t 0 " + container())
                              : sh(run_container() + " " + base() +
                                   " sh -c 'while :; do ls -R /usr >/dev/null; sleep 0.2; done'");
      ASSERT_EQ(r.status, 0) << r.err;
      container_up = !container_up;
      next_container += kChunks / 6;
    }
    if (s->chunks >= next_kill && runs.size() < 3) {
      ASSERT_EQ(sh("kill -KILL " + follow + "; while kill -0 " + follow +
                   " 2>/dev/null; do sleep 0.1; done")
                    .status,
                0);
      follow = start_follow(static_cast<int>(runs.size()));
      runs.emplace_back();
      next_kill += kChunks / 3;
    }
  }
  std::ofstream(stop).flush();
  ASSERT_TRUE(within_a_minute([&] { return sh("kill -0 " + perf + " 2>/dev/null").status != 0; }));
  // perf's last chunk (at its exit) fixed and removed too: then nothing of perf's is left raw.
  ASSERT_TRUE(within_a_minute([&] { return chunks_in(raw).empty(); }))
      << chunks_in(raw).size() << " raw chunks left";
  ASSERT_EQ(
      sh("kill -TERM " + follow + "; while kill -0 " + follow + " 2>/dev/null; do sleep 0.1; done")
          .status,
      0);

  // Each chunk perf named was fixed, once, by one of the three runs (a run killed after the
  // output and before its line leaves the next run to say "fixed by an earlier run").
  std::set<std::string> dumped;
  std::istringstream said(sh("cat " + quote(dir_ + "/perf.log.err")).out);
  for (std::string line; std::getline(said, line);) {
    const size_t at = line.find("Dump ");
    if (at == std::string::npos) continue;
    const std::string path = line.substr(at + 5, line.find(' ', at + 5) - at - 5);
    dumped.insert(fs::path(path).filename());
  }
  std::map<std::string, int> fixed;
  for (size_t run = 0; run < runs.size(); ++run) {
    for (const auto& [chunk, lines] :
         lines_of(sh("cat " + quote(dir_ + "/follow" + std::to_string(run) + ".jsonl")).out)) {
      for (const llvm::json::Object& line : lines) {
        const std::optional<int64_t> status = line.getInteger("status");
        fixed[chunk] += status == 0 || status == 3;
        EXPECT_NE(status, 2) << chunk << " in run " << run;
      }
    }
  }
  EXPECT_GE(dumped.size(), kChunks);
  size_t in_out = 0;
  for (const std::string& chunk : dumped) {
    EXPECT_LE(fixed[chunk], 1) << chunk;
    EXPECT_TRUE(fs::exists(out + "/" + chunk)) << chunk << " not fixed";
    in_out += fs::exists(out + "/" + chunk);
  }
  EXPECT_EQ(in_out, dumped.size());
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_EQ(e.path().filename().string().find(".pdfix-", 1), std::string::npos) << e.path();
  }
  // perf reads every 50th. A chunk of 16K may hold nothing but the maps perf lists again after
  // each switch: the samples are counted over them all.
  size_t read = 0;
  uint64_t samples = 0;
  for (const std::string& chunk : dumped) {
    if (read++ % 50 != 0) continue;
    const std::map<std::string, uint64_t> stats = perf_stats(out + "/" + chunk);
    EXPECT_FALSE(stats.empty()) << chunk << ": perf does not read it";
    if (const auto it = stats.find("SAMPLE"); it != stats.end()) samples += it->second;
  }
  EXPECT_GT(samples, 0u);

  // The container's processes were followed too: its libc (Debian 13's) is stored beside the
  // host's.
  size_t libcs = 0;
  for (const auto& e :
       fs::directory_iterator(dir_ + "/home/.debug/usr/lib/x86_64-linux-gnu/libc.so.6")) {
    libcs += e.is_directory();
  }
  EXPECT_GE(libcs, 2u);

  // Flat: each run's second half against its first (its start-up left out), and the journal
  // bounded by its cut, whatever the number of chunks.
  std::cout << "  chunks  rss MiB  fds  journal B  cpu s (run)\n";
  for (size_t run = 0; run < runs.size(); ++run) {
    const std::vector<Sample>& samples = runs[run];
    for (size_t i = 0; i < samples.size(); i += std::max<size_t>(1, samples.size() / 6)) {
      std::cout << "  " << samples[i].chunks << "  " << samples[i].rss_mib << "  " << samples[i].fds
                << "  " << samples[i].journal_bytes << "  " << samples[i].cpu_seconds << " (" << run
                << ")\n";
    }
    ASSERT_GE(samples.size(), 8u) << "run " << run;
    const size_t half = samples.size() / 2;
    const auto max_of = [&](size_t from, size_t to, auto field) {
      double m = 0;
      for (size_t i = from; i < to; ++i) m = std::max(m, static_cast<double>(field(samples[i])));
      return m;
    };
    const auto rss = [](const Sample& s) { return s.rss_mib; };
    const auto fds = [](const Sample& s) { return s.fds; };
    // RSS by its median: a binary first stored late in a run (a container started then) is read
    // and slimmed once, a transient of some MiB that a sample may or may not catch; what is held
    // on raises the median.
    const auto median_rss = [&](size_t from, size_t to) {
      std::vector<double> v;
      for (size_t i = from; i < to; ++i) v.push_back(samples[i].rss_mib);
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    const double level = median_rss(2, half);
    EXPECT_LE(median_rss(half, samples.size()), level + 4) << "run " << run;
    EXPECT_LE(max_of(half, samples.size(), rss), level + 32) << "run " << run;
    EXPECT_LE(max_of(half, samples.size(), fds), max_of(2, half, fds) + 2) << "run " << run;
    // CPU a chunk over each half.
    const auto per_chunk = [&](size_t from, size_t to) {
      const double chunks = static_cast<double>(samples[to].chunks - samples[from].chunks);
      return (samples[to].cpu_seconds - samples[from].cpu_seconds) / std::max(1.0, chunks);
    };
    EXPECT_LE(per_chunk(half, samples.size() - 1), 2 * per_chunk(1, half) + 0.005) << "run " << run;
  }
  for (const std::vector<Sample>& samples : runs) {
    for (const Sample& s : samples) {
      // Never more than the lines before a cut (256 of about 30 bytes) and the chunks in DIR.
      EXPECT_LE(s.journal_bytes, 16u * 1024) << "at " << s.chunks << " chunks";
    }
  }
}

}  // namespace
}  // namespace pdfix::e2e
