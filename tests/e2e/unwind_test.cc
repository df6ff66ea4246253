// pdfix unwind against the machine's perf: DWARF-mode recordings of a frame-pointer-less program
// and of Debian's python3, unwound by pdfix, must show the frames perf's own unwinder shows; and
// the CFI of an aarch64 binary built here unwinds a synthetic aarch64 stack.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "e2e/call_sites.h"
#include "e2e/harness.h"
#include "e2e/perf_frames.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// qsort calling back into the program through libc, recursion three to six levels deep.
constexpr const char* kProgram = R"(#include <stdio.h>
#include <stdlib.h>
static volatile unsigned sink;
__attribute__((noinline)) static int cmp(const void* a, const void* b) {
  unsigned x = *(const unsigned*)a, y = *(const unsigned*)b;
  for (int i = 0; i < 20; i++) sink += x ^ i;
  return x < y ? -1 : x > y;
}
__attribute__((noinline)) static void sort_some(unsigned* v, int n) { qsort(v, n, sizeof *v, cmp); }
__attribute__((noinline)) static unsigned recurse(int depth, unsigned* v, int n) {
  if (depth == 0) { sort_some(v, n); return v[0]; }
  unsigned r = recurse(depth - 1, v, n);
  sink += r;
  return r + depth;
}
int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 200;
  unsigned* v = malloc(4096 * sizeof *v);
  for (int k = 0; k < rounds; k++) {
    for (int i = 0; i < 4096; i++) v[i] = (unsigned)(i * 2654435761u) ^ k;
    recurse(3 + k % 4, v, 4096);
  }
  printf("%u\n", sink);
  return 0;
}
)";

constexpr const char* kPython = R"(import json, re
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
d = {}
for i in range(40000):
    d[str(i)] = json.dumps({"k": i, "v": [i, i * 2]})
    re.sub(r"\d", "x", d[str(i)])
print(fib(21), len(d))
)";

class UnwindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    std::ofstream(dir_ + "/prog.c") << kProgram;
    RunResult r = sh("cd " + dir_ + " && gcc -O2 -fomit-frame-pointer -o prog prog.c");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void record(const std::string& out, const std::string& command) {
    RunResult r = sh("perf record -q --call-graph dwarf -F 2000 -o " + out + " -- " + command +
                     " >/dev/null");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  // IN and OUT show the same frames on 99 % of samples, OUT 20 times smaller, no user stacks
  // left in its events, and the unwind did find callers.
  void expect_same_frames(const std::string& in, const std::string& out) {
    const auto before = frames(in), after = frames(out);
    ASSERT_GT(before.size(), 50U);
    EXPECT_GE(same_share(before, after), 0.99);
    expect_call_sites(before, after);
    EXPECT_GT(user_frames(after), 3 * after.size());
    EXPECT_GE(fs::file_size(in), 20 * fs::file_size(out));
    RunResult ev = sh("perf evlist -v -i " + quote(out));
    ASSERT_EQ(ev.status, 0) << ev.err;
    EXPECT_EQ(ev.out.find("STACK_USER"), std::string::npos) << ev.out;
    EXPECT_EQ(ev.out.find("REGS_USER"), std::string::npos) << ev.out;
    EXPECT_EQ(ev.out.find("sample_stack_user"), std::string::npos) << ev.out;
    EXPECT_NE(ev.out.find("CALLCHAIN"), std::string::npos) << ev.out;
  }
  std::string dir_;
};

TEST_F(UnwindTest, OwnProgramShowsPerfsFramesAndShrinks) {
  record(dir_ + "/in.data", dir_ + "/prog 200");
  RunResult r = sh(pdfix() + " unwind --json " + dir_ + "/in.data " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_frames(dir_ + "/in.data", dir_ + "/out.data");
  auto json = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(json)) << r.out;
  const llvm::json::Object& o = *json->getAsObject();
  const int64_t samples = *o.getInteger("samples");
  EXPECT_EQ(*o.getInteger("complete") + *o.getInteger("partial") + *o.getInteger("failed") +
                *o.getInteger("kernel_only"),
            samples);
  EXPECT_GT(*o.getInteger("complete"), samples * 9 / 10);
  EXPECT_GT(*o.getInteger("stack_bytes_dropped"), 0);
  // A second reader counts the same samples.
  if (!hotspot_perfparser().empty() || perf_required()) {
    auto theirs = hotspot_stats(dir_ + "/out.data");
    ASSERT_FALSE(theirs.empty()) << "hotspot-perfparser reads nothing of OUT";
    EXPECT_EQ(theirs["samples"], hotspot_stats(dir_ + "/in.data")["samples"]);
  }
}

// The shell loop of AForkAndExecLoop, its children on another CPU than the shell when there are
// two: perf writes the CPUs' buffers of a round in CPU order, so a child that runs on a lower CPU
// than the one that forked it has its exec and first samples in the file before its FORK. Left to
// the scheduler that happened on most runs, and on none of twelve under a loaded CI.
std::string fork_and_exec_loop() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
  }
  std::string parent, child;
  if (cpus.size() == 2) {
    parent = "taskset -c " + std::to_string(cpus[1]) + " ";
    child = "taskset -c " + std::to_string(cpus[0]) + " ";
  }
  return parent + "bash -c 'for i in 1 2 3 4 5 6; do " + child +
         "python3 -c \"sum(range(200000))\"; " + child + "ls -R /usr/share/doc >/dev/null; done'";
}

// A shell loop that forks and execs: a child's exec and first samples are often in the file
// before the FORK that made it (another CPU's buffer). Judged sample by sample: OUT has at least
// the user frames perf shows, every caller after a call to its callee's function, on 99% of the
// samples, the children sampled before their FORK among them; and the hit binaries count the
// children's. The judge is shown to refuse an unwinder that stops after the first frame and one
// that adds a frame after the last.
TEST_F(UnwindTest, AForkAndExecLoop) {
  std::set<uint32_t> early;
  // On one CPU only the buffer's wake-ups can put a child first: up to twelve tries.
  for (int attempt = 0; attempt < 12 && early.empty(); ++attempt) {
    record(dir_ + "/in.data", fork_and_exec_loop());
    early = sampled_before_their_fork(dir_ + "/in.data");
  }
  ASSERT_FALSE(early.empty()) << "in twelve recordings no child was sampled before its FORK";
  RunResult r = sh(pdfix() + " unwind " + dir_ + "/in.data " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto before = frames(dir_ + "/in.data"), after = frames(dir_ + "/out.data");
  ASSERT_GT(before.size(), 100U);
  const Judgement all = judge(before, after), children = judge(before, after, &early);
  std::cout << "fork and exec: " << all.as_deep << " of " << all.samples
            << " samples as deep as perf's; " << children.as_deep << " of " << children.samples
            << " of " << early.size() << " children sampled before their FORK; " << all.direct_calls
            << " direct calls' targets judged\n";
  EXPECT_GE(all.share(), 0.99) << all.example;
  EXPECT_GT(children.samples, 0U);
  EXPECT_GE(children.share(), 0.99) << children.example;
  EXPECT_GT(all.callers, all.samples);
  EXPECT_EQ(all.bad_callers, 0U) << all.example;
  EXPECT_GT(all.direct_calls, all.samples / 10);
  expect_call_sites(before, after);
  // Chains cut after their first user frame are seen as short wherever a chain had more; in a
  // loop of forks and execs up to half the samples have one user frame only.
  EXPECT_LT(judge(before, cut_after_first_user_frame(after)).share(), all.share() - 0.25);
  const Judgement garbage = judge(before, with_garbage_frame(after));
  EXPECT_GT(garbage.bad_callers, all.samples / 2) << garbage.example;
  EXPECT_LT(garbage.share(), 0.5);
  RunResult hits = sh(pdfix() + " buildid-list --hits " + dir_ + "/out.data");
  ASSERT_EQ(hits.status, 0) << hits.err;
  EXPECT_NE(hits.out.find("/usr/bin/ls"), std::string::npos) << hits.out;
  // archive --hits counts the children's samples for what they exec'd.
  ASSERT_EQ(sh(pdfix() + " fix -q " + dir_ + "/in.data " + dir_ + "/fixed.data").status, 0);
  RunResult archived = sh(pdfix() + " archive --hits --json " + dir_ + "/fixed.data " + dir_ +
                          "/bundle.tar 2>/dev/null");
  auto json = llvm::json::parse(archived.out);
  ASSERT_TRUE(bool(json)) << archived.out;
  int64_t ls_samples = 0;
  for (const llvm::json::Value& b : *json->getAsObject()->getArray("binaries")) {
    if (b.getAsObject()->getString("name") == "/usr/bin/ls") {
      ls_samples = b.getAsObject()->getInteger("samples").value_or(0);
    }
  }
  EXPECT_GT(ls_samples, 0) << archived.out;
}

TEST_F(UnwindTest, FixUnwindGivesUnwindsFrames) {
  record(dir_ + "/in.data", dir_ + "/prog 100");
  ASSERT_EQ(sh(pdfix() + " unwind -q " + dir_ + "/in.data " + dir_ + "/unwound.data").status, 0);
  RunResult r = sh(pdfix() + " fix --unwind -q " + dir_ + "/in.data " + dir_ + "/fixed.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(frames(dir_ + "/fixed.data"), frames(dir_ + "/unwound.data"));
  // Without --unwind fix leaves the stacks alone.
  ASSERT_EQ(sh(pdfix() + " fix -q " + dir_ + "/in.data " + dir_ + "/plain.data").status, 0);
  EXPECT_NE(sh("perf evlist -v -i " + dir_ + "/plain.data").out.find("STACK_USER"),
            std::string::npos);
}

// The binary is rebuilt after the recording: the file at the mapped path is another binary now,
// and its CFI must not be used. perf's build-id cache (filled by perf record) holds the one that
// ran, and unwinding takes that; without it, the program is named as having no proven copy.
TEST_F(UnwindTest, ARebuiltBinaryIsNotUsedTheCachedOneIs) {
  const std::string cache = dir_ + "/cache";
  RunResult rec = sh("perf --buildid-dir " + cache + " record -q --call-graph dwarf -F 2000 -o " +
                     dir_ + "/in.data -- " + dir_ + "/prog 100 >/dev/null");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const auto before = frames(dir_ + "/in.data");
  ASSERT_TRUE(fs::is_directory(cache + "/.build-id"));
  ASSERT_EQ(
      sh("cd " + dir_ + " && gcc -O1 -fomit-frame-pointer -o prog.new prog.c && mv prog.new prog")
          .status,
      0);
  RunResult r = sh(pdfix() + " unwind --json --buildid-dir " + cache + " " + dir_ + "/in.data " +
                   dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find(dir_ + "/prog"), std::string::npos) << r.out;
  EXPECT_GE(same_share(before, frames(dir_ + "/out.data")), 0.99);

  fs::create_directories(dir_ + "/empty");
  r = sh("PERF_BUILDID_DIR=" + dir_ + "/empty " + pdfix() + " unwind --json " + dir_ + "/in.data " +
         dir_ + "/out2.data");
  // Done, but the program's callers are lost: a script sees it from the exit status alone.
  ASSERT_EQ(r.status, 3) << r.err;
  auto json = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(json)) << r.out;
  const llvm::json::Object* unproven = json->getAsObject()->getObject("unproven");
  ASSERT_NE(unproven, nullptr);
  EXPECT_NE(unproven->get(dir_ + "/prog"), nullptr) << r.out;
  EXPECT_GT(json->getAsObject()->getInteger("stopped_without_binary").value_or(0), 0) << r.out;
}

// A handler that runs on a signal frame: above glibc's __restore_rt (whose CFI is an
// expression over the saved context) the interrupted code continues, raise() and main.
TEST_F(UnwindTest, ThroughASignalFrame) {
  std::ofstream(dir_ + "/sig.c") << R"(#include <signal.h>
static volatile unsigned sink;
__attribute__((noinline)) static void busy(int n) { for (int i = 0; i < n; i++) sink += i * i; }
__attribute__((noinline)) static void on_usr1(int sig) { busy(100000); sink += sig; }
int main(void) {
  signal(SIGUSR1, on_usr1);
  for (int k = 0; k < 3000; k++) raise(SIGUSR1);
  return sink == 42;
}
)";
  ASSERT_EQ(sh("cd " + dir_ + " && gcc -O2 -fomit-frame-pointer -o sig sig.c").status, 0);
  record(dir_ + "/in.data", dir_ + "/sig");
  ASSERT_EQ(sh(pdfix() + " unwind -q " + dir_ + "/in.data " + dir_ + "/out.data").status, 0);
  const auto before = frames(dir_ + "/in.data"), after = frames(dir_ + "/out.data");
  EXPECT_GE(same_share(before, after), 0.99);
  expect_call_sites(before, after);
  size_t through = 0;
  for (const Sample& s : after) {
    auto handler = std::find_if(s.begin(), s.end(), [](const std::string& l) {
      return l.find(" on_usr1 ") != std::string::npos;
    });
    through += handler != s.end() && std::any_of(handler, s.end(), [](const std::string& l) {
                 return l.find(" main ") != std::string::npos;
               });
  }
  EXPECT_GT(through, after.size() / 2);
}

// The program's own code has no .eh_frame (-fno-asynchronous-unwind-tables) and its
// .debug_frame is in a separate debug file, in perf's build-id cache as <id>/debug: unwinding
// takes the rows from there.
TEST_F(UnwindTest, SeparateDebugFileGivesTheRows) {
  RunResult b = sh("cd " + dir_ +
                   " && gcc -O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -o nocfi "
                   "prog.c && objcopy --only-keep-debug nocfi nocfi.debug && strip --strip-debug "
                   "nocfi && readelf -n nocfi | sed -n 's/.*Build ID: //p'");
  ASSERT_EQ(b.status, 0) << b.err;
  const std::string id = b.out.substr(0, b.out.find('\n'));
  ASSERT_EQ(id.size(), 40U) << b.out;
  record(dir_ + "/in.data", dir_ + "/nocfi 100");
  auto unwound = [&](const std::string& cache) {
    RunResult r = sh(pdfix() + " unwind --json --buildid-dir " + cache + " " + dir_ + "/in.data " +
                     dir_ + "/out.data");
    EXPECT_EQ(r.status, 0) << r.err;
    auto json = llvm::json::parse(r.out);
    EXPECT_TRUE(bool(json)) << r.out;
    return json ? *json->getAsObject() : llvm::json::Object();
  };
  const std::string cache = dir_ + "/cache";
  fs::create_directories(cache);
  llvm::json::Object without = unwound(cache);
  ASSERT_NE(without.getObject("lacking_cfi"), nullptr);
  EXPECT_NE(without.getObject("lacking_cfi")->get(dir_ + "/nocfi"), nullptr);

  const std::string at = cache + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
  fs::create_directories(at);
  fs::copy_file(dir_ + "/nocfi.debug", at + "/debug");
  llvm::json::Object with = unwound(cache);
  EXPECT_EQ(with.getObject("lacking_cfi")->get(dir_ + "/nocfi"), nullptr);
  EXPECT_GT(*with.getInteger("complete"), *with.getInteger("samples") * 9 / 10);
  EXPECT_GT(user_frames(frames(dir_ + "/out.data")), 3 * frames(dir_ + "/out.data").size());
}

// The binary that ran is gone from this host (rebuilt in place) and only a debuginfod server has
// it: `pdfix fetch` puts it into a build-id cache, and unwinding takes it from there.
TEST_F(UnwindTest, BinariesFetchedFromDebuginfod) {
  fs::create_directories(dir_ + "/served");
  fs::copy_file(dir_ + "/prog", dir_ + "/served/prog");
  RunResult rec = sh("perf record -q -N --call-graph dwarf -F 2000 -o " + dir_ + "/in.data -- " +
                     dir_ + "/prog 100 >/dev/null");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const auto before = frames(dir_ + "/in.data");
  const std::string id =
      sh("readelf -n " + dir_ + "/prog | sed -n 's/.*Build ID: //p'").out.substr(0, 40);
  ASSERT_EQ(id.size(), 40U);
  ASSERT_EQ(
      sh("cd " + dir_ + " && gcc -O1 -fomit-frame-pointer -o prog.new prog.c && mv prog.new prog")
          .status,
      0);
  Debuginfod server(dir_, "-F " + quote(dir_ + "/served"));
  const std::string& url = server.url();
  const bool ready = server.serves("executable", id, dir_ + "/served-prog");
  const std::string cache = dir_ + "/cache";
  RunResult fetched =
      sh("DEBUGINFOD_CACHE_PATH=" + dir_ + "/client " + pdfix() + " fetch -q --buildid-dir " +
         cache + " --debuginfod " + url + " " + dir_ + "/in.data");
  // In one step: unwind asks the server itself for what it lacks, into another cache.
  fs::create_directories(dir_ + "/cache2");
  RunResult one_step =
      sh("DEBUGINFOD_CACHE_PATH=" + dir_ + "/client2 " + pdfix() + " unwind --json --buildid-dir " +
         dir_ + "/cache2 --debuginfod " + url + " " + dir_ + "/in.data " + dir_ + "/one.data");
  server.stop();
  ASSERT_TRUE(ready) << "debuginfod never served the program";
  ASSERT_EQ(fetched.status, 0) << fetched.err;
  ASSERT_EQ(one_step.status, 0) << one_step.err << one_step.out;
  EXPECT_NE(one_step.out.find("\"" + dir_ + "/prog\": \"fetched"), std::string::npos)
      << one_step.out;
  EXPECT_GE(same_share(before, frames(dir_ + "/one.data")), 0.99);
  // The server gone: the summary names it, and the exit status says not all is there.
  fs::create_directories(dir_ + "/cache3");
  RunResult gone =
      sh("DEBUGINFOD_CACHE_PATH=" + dir_ + "/client3 " + pdfix() + " unwind --buildid-dir " + dir_ +
         "/cache3 --debuginfod " + url + " " + dir_ + "/in.data " + dir_ + "/gone.data");
  EXPECT_EQ(gone.status, 3) << gone.err;
  EXPECT_NE(gone.err.find("debuginfod could not be reached: " + url), std::string::npos)
      << gone.err;
  RunResult r = sh(pdfix() + " unwind --json --buildid-dir " + cache + " " + dir_ + "/in.data " +
                   dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find(dir_ + "/prog"), std::string::npos) << r.out;
  EXPECT_GE(same_share(before, frames(dir_ + "/out.data")), 0.99);
}

// clock_gettime runs in the vdso: its CFI is this machine's vdso's, whose id is the recording's.
TEST_F(UnwindTest, OutOfTheVdso) {
  std::ofstream(dir_ + "/vd.c") << R"(#include <time.h>
int main(void) {
  struct timespec t; long s = 0;
  for (int i = 0; i < 3000000; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; }
  return s == 42;
}
)";
  ASSERT_EQ(sh("cd " + dir_ + " && gcc -O2 -fomit-frame-pointer -o vd vd.c").status, 0);
  record(dir_ + "/in.data", dir_ + "/vd");
  ASSERT_EQ(sh(pdfix() + " unwind -q " + dir_ + "/in.data " + dir_ + "/out.data").status, 0);
  const auto after = frames(dir_ + "/out.data");
  EXPECT_GE(same_share(frames(dir_ + "/in.data"), after), 0.99);
  size_t through = 0;
  for (const Sample& s : after) {
    through += !s.empty() && s.size() > 2 && s[1].find("([vdso])") != std::string::npos &&
               std::any_of(s.begin(), s.end(), [](const std::string& l) {
                 return l.find(" main ") != std::string::npos;
               });
  }
  EXPECT_GT(through, after.size() / 4);
}

TEST_F(UnwindTest, PipeInPipeOut) {
  RunResult rec = sh("perf record -q --call-graph dwarf -F 2000 -o - -- " + dir_ +
                     "/prog 100 2>/dev/null > " + dir_ + "/in.data");
  ASSERT_EQ(rec.status, 0) << rec.err;
  RunResult r =
      sh("cat " + dir_ + "/in.data | " + pdfix() + " unwind -q - - | cat > " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_frames(dir_ + "/in.data", dir_ + "/out.data");
}

TEST_F(UnwindTest, DebiansPython) {
  ASSERT_TRUE(fs::exists("/usr/bin/python3"));
  std::ofstream(dir_ + "/work.py") << kPython;
  record(dir_ + "/in.data", "/usr/bin/python3 " + dir_ + "/work.py");
  RunResult r = sh(pdfix() + " unwind " + dir_ + "/in.data " + dir_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_frames(dir_ + "/in.data", dir_ + "/out.data");
}

}  // namespace
}  // namespace pdfix::e2e
