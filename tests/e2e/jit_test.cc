// JIT code travels with the recording: node with a jitdump (--perf-prof), node with a map file
// (--perf-basic-prof) and OpenJDK 17 with a map file at exit, each recorded by the machine's perf,
// fixed and bundled by pdfix; then the dump and the map files are taken away, the bundle unpacked
// elsewhere, and perf must name the same functions as perf inject --jit (jitdump) or as perf with
// the map file in place did.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "e2e/harness.h"
#include "gtest/gtest.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {

namespace fs = std::filesystem;

// The workloads spin for CPU time, not wall time: perf samples CPU time, so fib gets as many
// samples on a slow or busy machine as on a fast, idle one (4 x 120 ms at perf's 4000 Hz: about
// 1,900). The sort (a builtin calling a JS comparator), node's start-up and its GC take a share of
// the rest that does depend on the machine.
constexpr const char* kNodeWork = R"(
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function spin(ms) { const end = cpuMs() + ms; let s = 0; while (cpuMs() < end) s += fib(20); return s; }
function sortMany() { const a = []; for (let i = 0; i < 200000; i++) a.push((i * 7919) % 100003); a.sort((x, y) => x - y); return a[5]; }
let t = 0; for (let i = 0; i < 4; i++) { t += spin(120); t += sortMany(); }
console.log(t > 0);
)";

constexpr const char* kJavaWork = R"(
public class Work {
  static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
  static long spin(long ms) {
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    long end = cpu.getCurrentThreadCpuTime() + ms * 1000000, s = 0;
    while (cpu.getCurrentThreadCpuTime() < end) s += fib(22);
    return s;
  }
  public static void main(String[] a) {
    long t = 0;
    for (int i = 0; i < 5; i++) t += spin(120);
    System.out.println(t > 0);
  }
}
)";

// Each sample's symbol as perf script names it, in file order ("[unknown]" where it names none).
std::vector<std::string> sample_symbols(const std::string& env, const std::string& perf_args,
                                        const std::string& data) {
  RunResult r =
      sh(env + " perf " + perf_args + " script -F ip,sym -i " + quote(data) + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  static const std::regex row(R"(^\s*[0-9a-f]+\s+(.*)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) out.push_back(m[1]);
  }
  return out;
}

// Samples in the JIT-compiled fib that a workload spinning for 480 ms of CPU time must give: at
// perf's 4000 Hz about 1,900, whatever the machine's speed or load.
constexpr size_t kJitSamples = 500;

class JitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    home_ = dir_ + "/home";
    fs::create_directories(home_);
    fs::create_directories(dir_ + "/elsewhere");
  }
  void TearDown() override {
    for (const std::string& m : moved_) fs::remove(m);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  // With the test's HOME, as perf reads it after: perf's own cache of the recording's binaries
  // (the vdso's copy above all, which only it holds) is where perf's names are taken from.
  void record(const std::string& perf_options, const std::string& command) {
    RunResult r = sh("cd " + quote(dir_) + " && " + env() + "perf record -q " + perf_options +
                     " -o in.data -- " + command);
    ASSERT_EQ(r.status, 0) << r.err;
  }
  // HOME is the test's: the ELF files go to its ~/.debug.
  std::string env() const { return "HOME=" + quote(home_) + " PERF_BUILDID_DIR= "; }
  // fix --archive, then everything the recording host had is taken away: the dump, the map
  // files, the cache; the bundle is unpacked elsewhere and read with its own .debug.
  std::vector<std::string> fixed_and_moved(const std::vector<std::string>& jit_files) {
    RunResult fix = sh(env() + pdfix() + " fix " + quote(dir_ + "/in.data") + " " +
                       quote(dir_ + "/out.data") + " --archive " + quote(dir_ + "/b.tar"));
    EXPECT_EQ(fix.status, 0) << fix.err;
    fix_summary_ = fix.err;
    RunResult again = sh(env() + pdfix() + " fix -q " + quote(dir_ + "/out.data") + " " +
                         quote(dir_ + "/again.data"));
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_TRUE(same_file(dir_ + "/out.data", dir_ + "/again.data"))
        << "a second fix changed the output";
    for (const std::string& f : jit_files) fs::remove(f);
    fs::remove_all(home_ + "/.debug");
    RunResult unpack =
        sh(pdfix() + " unpack " + quote(dir_ + "/b.tar") + " " + quote(dir_ + "/elsewhere/un"));
    EXPECT_EQ(unpack.status, 0) << unpack.err;
    return sample_symbols(env(), "--buildid-dir " + quote(dir_ + "/elsewhere/un/.debug"),
                          dir_ + "/elsewhere/un/perf.data");
  }
  // `ours` names what `theirs` names for >= 99% of samples and for every sample `theirs` names in
  // `jit_function`, and there are enough of those to mean something. Counts, not shares of all
  // samples: what else a runtime does (start-up, compiler threads, GC) varies with the machine.
  void expect_same_names(const std::vector<std::string>& theirs,
                         const std::vector<std::string>& ours, const std::string& jit_function) {
    ASSERT_EQ(theirs.size(), ours.size());
    size_t same = 0;
    size_t jitted = 0;
    size_t jitted_same = 0;
    std::string differs;
    std::string others;  // the first few differing elsewhere: what a failure is about
    size_t listed = 0;
    for (size_t i = 0; i < theirs.size(); ++i) {
      if (theirs[i] == ours[i]) ++same;
      if (theirs[i].find(jit_function) == std::string::npos) {
        if (theirs[i] != ours[i] && listed++ < 8) {
          absl::StrAppend(&others, "  sample ", i, ": perf's '", theirs[i], "', pdfix's '", ours[i],
                          "'\n");
        }
        continue;
      }
      ++jitted;
      if (theirs[i] == ours[i]) {
        ++jitted_same;
      } else if (differs.empty()) {
        differs = absl::StrCat("sample ", i, ": perf's '", theirs[i], "', pdfix's '", ours[i], "'");
      }
    }
    std::cout << "  " << same << " of " << theirs.size() << " samples named alike, " << jitted_same
              << " of " << jitted << " in " << jit_function << "\n"
              << others;
    EXPECT_GE(jitted, kJitSamples) << "the workload spins for CPU time: this many are expected";
    EXPECT_EQ(jitted_same, jitted) << differs << "\n" << fix_summary_;
    EXPECT_GE(same * 100, theirs.size() * 99)
        << same << " of " << theirs.size() << " samples named alike\n"
        << others << fix_summary_;
    // A second reader takes the output: every sample, and maps.
    const auto hotspot = hotspot_stats(dir_ + "/out.data");
    ASSERT_FALSE(hotspot.empty()) << "hotspot-perfparser reads nothing of the output";
    EXPECT_EQ(hotspot.at("samples"), hotspot_stats(dir_ + "/in.data").at("samples"));
  }

  std::string dir_;
  std::string home_;
  std::string fix_summary_;
  std::vector<std::string> moved_;
};

std::string map_file_of(const std::string& data) {
  RunResult r = sh("perf script --show-task-events -F pid -i " + quote(data) +
                   " 2>/dev/null | "
                   "awk '{print $1}' | sort -u");
  std::istringstream pids(r.out);
  for (std::string pid; pids >> pid;) {
    const std::string path = "/tmp/perf-" + pid + ".map";
    if (fs::exists(path)) return path;
  }
  return "";
}

TEST_F(JitTest, NodeJitdumpNamesWhatPerfInjectJitNames) {
  write("work.js", kNodeWork);
  // Small buffers, read often: many rounds, where perf's order of delivery is at stake.
  record("-k mono -F 2000 -m 8", "node --perf-prof --perf-prof-unwinding-info work.js");
  const auto rounds = perf_stats(dir_ + "/in.data");
  ASSERT_TRUE(rounds.contains("FINISHED_ROUND"));
  EXPECT_GE(rounds.at("FINISHED_ROUND"), 4u);
  std::vector<std::string> dumps;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().filename().string().starts_with("jit-")) dumps.push_back(e.path());
  }
  ASSERT_EQ(dumps.size(), 1u) << "node wrote no jitdump";
  RunResult inject =
      sh("cd " + quote(dir_) + " && " + env() + " perf inject --jit -i in.data -o injected.data");
  ASSERT_EQ(inject.status, 0) << inject.err;
  const auto theirs = sample_symbols(env(), "", dir_ + "/injected.data");
  std::vector<std::string> jit_files = dumps;
  size_t per_function = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().filename().string().starts_with("jitted-")) {
      jit_files.push_back(e.path());
      ++per_function;
    }
  }
  const auto ours = fixed_and_moved(jit_files);
  expect_same_names(theirs, ours, "JS:*fib");
  EXPECT_NE(fix_summary_.find("1 jitdump"), std::string::npos) << fix_summary_;
  // Each code map is where perf's rounds deliver it by its time: none ahead of the recording's
  // time (delivering what follows out of order, against maps of code loaded later) nor behind.
  const RunResult script =
      sh("perf script -i " + quote(dir_ + "/out.data") + " 2>&1 >/dev/null | grep -i order");
  EXPECT_EQ(script.out, "");
  RunResult check = sh(env() + pdfix() + " check " + quote(dir_ + "/out.data"));
  EXPECT_EQ(check.status, 0) << check.out;
  // One file for the dump, where perf inject wrote one per function.
  size_t ours_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_ + "/elsewhere/un/.debug")) {
    if (e.path().string().find("jitted-") != std::string::npos && e.path().filename() == "elf") {
      ++ours_files;
    }
  }
  EXPECT_EQ(ours_files, 1u);
  EXPECT_GT(per_function, 100u);
}

TEST_F(JitTest, NodeMapFileNamesWhatPerfNamedWithTheMapInPlace) {
  write("work.js", kNodeWork);
  record("", "node --perf-basic-prof work.js");
  const std::string map = map_file_of(dir_ + "/in.data");
  ASSERT_FALSE(map.empty()) << "node wrote no /tmp/perf-PID.map";
  moved_.push_back(map);
  const auto theirs = sample_symbols(env(), "", dir_ + "/in.data");
  const auto ours = fixed_and_moved({map});
  expect_same_names(theirs, ours, "JS:*fib");
  EXPECT_NE(fix_summary_.find("1 perf map file"), std::string::npos) << fix_summary_;
  // The map file gone, check of the input says the JIT code can no longer be named.
  RunResult check = sh(env() + pdfix() + " check " + quote(dir_ + "/in.data"));
  EXPECT_NE(check.out.find("anonymous code (JIT code?) of process"), std::string::npos)
      << check.out;
}

TEST_F(JitTest, JavaMapFileAtExitNamesWhatPerfNamedWithTheMapInPlace) {
  write("Work.java", kJavaWork);
  RunResult javac = sh("cd " + quote(dir_) + " && javac Work.java");
  ASSERT_EQ(javac.status, 0) << javac.err;
  record("", "java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp . Work");
  const std::string map = map_file_of(dir_ + "/in.data");
  ASSERT_FALSE(map.empty()) << "the JVM wrote no /tmp/perf-PID.map";
  moved_.push_back(map);
  const auto theirs = sample_symbols(env(), "", dir_ + "/in.data");
  const auto ours = fixed_and_moved({map});
  expect_same_names(theirs, ours, "Work.fib");
}

// Of the samples whose leaf is `leaf`: how many, and how many of their callchains reach `root`.
std::pair<size_t, size_t> chains_reaching(const std::string& env, const std::string& data,
                                          const std::string& leaf, const std::string& root) {
  RunResult r = sh(env + " perf script -F ip,sym -i " + quote(data) + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  size_t samples = 0;
  size_t reaching = 0;
  for (const std::string& block : script_samples(r.out)) {
    if (block.substr(0, block.find('\n')).find(leaf) != std::string::npos) {
      ++samples;
      if (block.find(root) != std::string::npos) ++reaching;
    }
  }
  return {samples, reaching};
}

// Each sample's frames as perf script names them (symbols, no addresses) up to `root`, by the
// sample's "tid time:"; only samples whose chain reaches `root`.
std::map<std::string, std::vector<std::string>> chains_to(const std::string& env,
                                                          const std::string& data,
                                                          const std::string& root) {
  RunResult r =
      sh(env + " perf script --no-inline -F tid,time,ip,sym -i " + quote(data) + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream lines(r.out + "\n");
  std::string header;
  std::vector<std::string> chain;
  bool reached = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      if (reached) out[header] = chain;
      header.clear();
      chain.clear();
      reached = false;
    } else if (header.empty()) {
      header = line;
    } else if (!reached) {
      const size_t start = line.find_first_not_of(" \t");
      const size_t sym = line.find(' ', start);
      chain.push_back(sym == std::string::npos ? "" : line.substr(sym + 1));
      reached = chain.back() == root;
    }
  }
  return out;
}

// The JIT ELF file `data` names, as fix cached it under `home`.
std::string cached_jit_elf(const std::string& env, const std::string& home,
                           const std::string& data) {
  RunResult r = sh(env + " perf buildid-list -i " + quote(data) + " 2>/dev/null");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("/jitted-") == std::string::npos || line.size() < 40) continue;
    return home + "/.debug/.build-id/" + line.substr(0, 2) + "/" + line.substr(2, 38) + "/elf";
  }
  return "";
}

// Samples whose leaf is a function named `prefix`..., by the source line llvm-symbolizer reads
// for the leaf's address in `elf` (0: none). A name that several of the file's functions carry
// is left out, as perf's offset into it names no one address.
std::map<uint64_t, size_t> leaf_lines(const std::string& env, const std::string& data,
                                      const std::string& elf, const std::string& prefix) {
  std::map<std::string, std::vector<uint64_t>> starts;
  std::istringstream symbols(sh("llvm-nm-19 " + quote(elf)).out);
  for (std::string row; std::getline(symbols, row);) {
    if (row.size() > 19)
      starts[row.substr(19)].push_back(std::stoull(row.substr(0, 16), nullptr, 16));
  }
  std::map<uint64_t, size_t> samples_at;
  std::istringstream leaves(
      sh(env + " perf script --no-inline -F ip,sym,symoff -G -i " + quote(data) + " 2>/dev/null")
          .out);
  for (std::string line; std::getline(leaves, line);) {
    const size_t start = line.find(prefix);
    const size_t plus = line.rfind("+0x");
    if (start == std::string::npos || plus == std::string::npos || plus < start) continue;
    auto it = starts.find(line.substr(start, plus - start));
    if (it == starts.end() || it->second.size() != 1) continue;
    ++samples_at[it->second.front() + std::stoull(line.substr(plus + 3), nullptr, 16)];
  }
  std::string addresses;
  for (const auto& [address, n] : samples_at)
    absl::StrAppend(&addresses, " 0x", absl::Hex(address));
  std::map<uint64_t, size_t> out;
  if (samples_at.empty()) return out;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(
      sh("llvm-symbolizer-19 --output-style=JSON --obj=" + quote(elf) + addresses).out);
  if (!json) {
    ADD_FAILURE() << llvm::toString(json.takeError());
    return out;
  }
  const llvm::json::Array* found = json->getAsArray();
  if (found == nullptr || found->size() != samples_at.size()) return out;
  auto count = samples_at.begin();
  for (const llvm::json::Value& v : *found) {
    const llvm::json::Array* frames = v.getAsObject()->getArray("Symbol");
    const uint64_t line = frames == nullptr || frames->empty()
                              ? 0
                              : (*frames)[0].getAsObject()->getInteger("Line").value_or(0);
    out[line] += (count++)->second;
  }
  return out;
}

TEST_F(JitTest, NodeDwarfStacksUnwindThroughJitFrames) {
  write("work.js", R"(
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function outer(k) { let s = 0; for (let i = 0; i < k; i++) s += fib(18); return s; }
function cpuMs() { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }
function spin(ms) { const end = cpuMs() + ms; let s = 0; while (cpuMs() < end) s += outer(3); return s; }
let t = 0; for (let i = 0; i < 4; i++) t += spin(150);
console.log(t > 0);
)");
  record("-k mono --call-graph dwarf -F 999",
         "node --perf-prof --perf-prof-unwinding-info work.js");
  RunResult fix = sh(env() + pdfix() + " fix --unwind " + quote(dir_ + "/in.data") + " " +
                     quote(dir_ + "/out.data"));
  EXPECT_EQ(fix.status, 0) << fix.err;
  RunResult without = sh(env() + pdfix() + " fix -q --no-jit --unwind " + quote(dir_ + "/in.data") +
                         " " + quote(dir_ + "/nojit.data"));
  EXPECT_TRUE(without.status == 0 || without.status == 3) << without.err;
  // With the dump's unwinding tables the chains of fib's samples go on through the JIT frames to
  // node's own; without them they stop at the first JIT frame.
  const auto [samples, reaching] =
      chains_reaching(env(), dir_ + "/out.data", "JS:*fib", "node::Start");
  const auto [all, all_reaching] = chains_reaching(env(), dir_ + "/out.data", "", "node::Start");
  const size_t reaching_nojit =
      chains_reaching(env(), dir_ + "/nojit.data", "", "node::Start").second;
  std::cout << "  " << reaching << " of " << samples << " fib samples reach node::Start; of all "
            << all << " samples " << all_reaching << ", without the dump " << reaching_nojit
            << "\n";
  ASSERT_GT(samples, 100u) << fix.err;
  EXPECT_GE(reaching * 10, samples * 9) << fix.err;
  EXPECT_LT(reaching_nojit * 2, all_reaching);
  // fib's samples have the line the dump gave fib (2), or none where V8 gave no position (its
  // prologue), in the ELF file fix cached. V8's file names are its own stray bytes (a newline
  // among them breaks perf's addr2line parse), so the line is read as a number, from
  // llvm-symbolizer's JSON.
  const std::string elf = cached_jit_elf(env(), home_, dir_ + "/out.data");
  ASSERT_FALSE(elf.empty());
  const std::map<uint64_t, size_t> lines = leaf_lines(env(), dir_ + "/out.data", elf, "JS:*fib");
  std::string by_line;
  for (const auto& [line, n] : lines) absl::StrAppend(&by_line, " line ", line, ": ", n);
  std::cout << "  fib's samples by source line:" << by_line << "\n";
  EXPECT_GT(lines.contains(2) ? lines.at(2) : 0, samples / 4) << by_line;
  EXPECT_EQ(lines.size(), lines.contains(0) ? 2u : 1u) << by_line;
  // The whole chain, in order, fib's recursion, the JS callers (interpreted ones are V8's
  // InterpreterEntryTrampoline frames), V8's entry, node's own frames: as perf names it from
  // perf inject --jit's output (one ELF file per function, with the dump's unwinding tables),
  // unwound by perf itself, wherever perf's chain reaches node::Start.
  ASSERT_EQ(sh("cd " + quote(dir_) + " && " + env() +
               " perf inject --jit -i in.data -o injected.data 2>&1")
                .status,
            0);
  const auto perfs = chains_to(env(), dir_ + "/injected.data", "node::Start");
  const auto ours = chains_to(env(), dir_ + "/out.data", "node::Start");
  size_t fib_chains = 0, same = 0, js_callers = 0;
  std::string example;
  for (const auto& [header, chain] : perfs) {
    if (chain.front().find("fib ") == std::string::npos) continue;
    ++fib_chains;
    js_callers += std::any_of(chain.begin(), chain.end(), [](const std::string& f) {
      return f.find("outer ") != std::string::npos || f.starts_with("Builtin:Interpreter");
    });
    auto it = ours.find(header);
    if (it != ours.end() && it->second == chain) {
      ++same;
    } else if (example.empty()) {
      example =
          header + ": perf's " + absl::StrJoin(chain, " < ") + "; pdfix's " +
          (it == ours.end() ? "does not reach node::Start" : absl::StrJoin(it->second, " < "));
    }
  }
  std::cout << "  " << same << " of " << fib_chains
            << " fib chains perf unwinds to node::Start from perf inject --jit's output are "
               "pdfix's, frame by frame\n";
  ASSERT_GT(fib_chains, 50u);
  EXPECT_EQ(js_callers, fib_chains);
  EXPECT_GE(same * 100, fib_chains * 95) << example;
}

TEST_F(JitTest, WithoutMonoTheDumpIsLeftAndFixSaysSo) {
  write("work.js", kNodeWork);
  record("", "node --perf-prof work.js");
  RunResult fix =
      sh(env() + pdfix() + " fix " + quote(dir_ + "/in.data") + " " + quote(dir_ + "/out.data"));
  EXPECT_EQ(fix.status, 3) << fix.err;
  EXPECT_NE(fix.err.find("-k mono"), std::string::npos) << fix.err;
  // check says so before anything is written: the JIT code stays unknown after fix.
  RunResult check = sh(env() + pdfix() + " check " + quote(dir_ + "/in.data"));
  EXPECT_EQ(check.status, 3) << check.out;
  EXPECT_NE(check.out.find("its jitdump"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("stay [unknown]"), std::string::npos) << check.out;
  RunResult skip = sh(env() + pdfix() + " fix -q --no-jit " + quote(dir_ + "/in.data") + " " +
                      quote(dir_ + "/skipped.data"));
  EXPECT_EQ(skip.status, 0) << skip.err;
}

// A process that only reads a dump (pdfix --jit-dir, perf inject -j) maps it too, not executable,
// and --call-graph dwarf records such maps. Its map is no marker: the dump (node's of process 245,
// from the arm64 VM) is not that process's JIT code. (CI once saw fix read this very dump, mapped
// by a test beside a system-wide recording, as the JIT code of the pdfix that read it.)
TEST_F(JitTest, AProcessThatReadsADumpIsNoRuntime) {
  const std::string dump = corpus_dir() + "/arm64/jit/jit-245.dump";
  record("-k mono --call-graph dwarf -F 999",
         "python3 -c " + quote("import mmap, time; f = open('" + dump +
                               "', 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); "
                               "time.sleep(0.2)"));
  RunResult maps = sh("perf script --show-mmap-events -i " + quote(dir_ + "/in.data") +
                      " 2>/dev/null | grep -c " + quote("r--s " + dump));
  ASSERT_EQ(maps.out, "1\n") << "the reader's map of the dump is not in the recording";
  RunResult fix = sh(env() + pdfix() + " fix --json " + quote(dir_ + "/in.data") + " " +
                     quote(dir_ + "/out.data"));
  EXPECT_EQ(fix.status, 0) << fix.err;
  auto json = llvm::json::parse(fix.out);
  ASSERT_TRUE(bool(json)) << fix.out;
  const llvm::json::Array* sources = json->getAsObject()->getObject("jit")->getArray("sources");
  ASSERT_NE(sources, nullptr);
  EXPECT_TRUE(sources->empty()) << fix.out;
  EXPECT_EQ(sh("find " + quote(home_) + " -name 'jitted-*'").out, "");
}

}  // namespace
}  // namespace pdfix::e2e
