// pdfix export of a system-wide recording (`perf record -a -g`, no build-id cache: -B): kernel
// frames, the host's libraries (named from their Debian debug files' symbols) and stripped
// programs. Go's pprof reads the profile (-raw, nothing symbolized by pprof), and the leaf of
// each sample of the test's own processes (by comm label), by binary and function, agrees with
// `perf report --sort dso,sym` on >= 99% of the samples. Names agree when they name one address in
// the binary's symbols (perf and LLVM pick different aliases of a libc function: readdir,
// __GI___readdir64); an address perf shows in hex is one pdfix leaves unnamed. This machine's
// kernel has no modules (all built in): module frames are the unit tests' (Kallsyms). Read as
// on another host, its kernel frames are named from the kallsyms given with --kallsyms.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "e2e/harness.h"
#include "e2e/leaf_names.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr char kSpin[] = R"(#include <stdio.h>
__attribute__((noinline)) double spin_wide(double x) {
  for (int i = 0; i < 40000000; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
  return x;
}
int main(void) { printf("%f\n", spin_wide(1)); return 0; }
)";

TEST(ExportSystemTest, EverySamplesLeafIsNamedAsPerfReportNamesIt) {
  PDFIX_NEEDS_PERF_RECORD();
  ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
  const std::string dir = temp_dir();
  const std::string env = "HOME=" + quote(dir) + " ";
  std::ofstream(dir + "/spin.c") << kSpin;
  RunResult r = sh("gcc -O2 -g -fno-omit-frame-pointer -o " + quote(dir + "/spin") + " " +
                   quote(dir + "/spin.c"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + "perf record -q -a -g -B -o " + quote(dir + "/in.data") + " -- sh -c " +
         quote(quote(dir + "/spin") +
               " >/dev/null & find /usr/lib >/dev/null; ls -lR /usr/share/doc >/dev/null; wait"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + pdfix() + " export -q " + quote(dir + "/in.data") + " " + quote(dir + "/out.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  // The samples of this test's own processes: other tests running beside it may rebuild a
  // binary at its path, which perf then names from the new file (wrongly) and pdfix not at all.
  const std::string comms = "spin,find,ls,sh,perf-exec";
  r = sh(env +
         "go tool pprof -symbolize=none -raw -tagfocus='comm=^(spin|find|ls|sh|perf-exec)$' " +
         quote(dir + "/out.pb.gz") + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;

  const std::vector<RawLeaf> leaves = raw_leaves(r.out);
  ASSERT_FALSE(leaves.empty()) << r.out.substr(0, 2000);

  // The symbols of each binary the samples' leaves lie in: the kernel's kallsyms, the others'
  // own and their debug files' (by build-id, as Debian's -dbg packages lay them out).
  Aliases aliases;
  std::set<std::string> files;
  for (const RawLeaf& leaf : leaves) files.insert(leaf.file);
  for (const std::string& file : files) {
    if (file.starts_with("[kernel.kallsyms]")) {
      aliases.add("[kernel.kallsyms]", sh("cat /proc/kallsyms").out);
      continue;
    }
    if (file.starts_with("[") || !fs::exists(file)) continue;
    std::string nm = sh("nm -a --defined-only " + quote(file) + " 2>/dev/null").out +
                     sh("nm -D --defined-only " + quote(file) + " 2>/dev/null").out;
    const std::string id = own_id(file);
    const std::string debug = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" +
                              id.substr(std::min<size_t>(2, id.size())) + ".debug";
    if (id.size() > 2 && fs::exists(debug)) {
      nm += sh("nm -a --defined-only " + quote(debug) + " 2>/dev/null").out;
    }
    aliases.add(dso_of(file), nm);
  }

  LeafCounts ours;  // (dso, function): samples
  uint64_t ours_total = 0;
  for (const RawLeaf& leaf : leaves) {
    const std::string dso = dso_of(leaf.file);
    ours[{dso, aliases.canonical(dso, leaf.function)}] += leaf.count;
    ours_total += leaf.count;
  }
  r = sh("perf report -i " + quote(dir + "/in.data") + " --stdio --no-children --comms " + comms +
         " --sort comm,dso,sym -F sample,comm,dso,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  LeafCounts perfs;
  uint64_t total = 0;
  std::istringstream report(r.out);
  // "  COUNT  COMM  DSO  [k] NAME": a DSO's name may hold spaces ("memfd:x (deleted)"). The
  // command is a sort key because perf filters by it entries of that key: without it, an entry
  // merges the samples of many commands and is kept or dropped by the first one's.
  const std::regex row(R"(^\s*(\d+)\s+\S+\s+(.*\S)\s+\[(.)\]\s+(.*)$)");
  for (std::string line; std::getline(report, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const uint64_t n = std::stoull(m[1]);
    std::string name = m[4];
    // An address perf could not name is one pdfix leaves unnamed.
    if (name.starts_with("0x")) name.clear();
    perfs[{m[2], aliases.canonical(m[2], name)}] += n;
    total += n;
  }
  const auto [agree, differ] = agreement(perfs, ours);
  std::cout << agree << " of " << total << " samples' leaves named as perf names them\n";
  EXPECT_EQ(ours_total, total) << differ;
  EXPECT_GE(agree * 100, total * 99) << agree << " of " << total << " samples named alike\n"
                                     << differ;
  // The kernel's frames are many of them, named; the program's own function too (its samples
  // are its CPU time: about a thousand however busy the machine).
  uint64_t kernel = 0;
  for (const auto& [key, n] : ours)
    kernel += key.first == "[kernel.kallsyms]" && !key.second.empty() ? n : 0;
  EXPECT_GT(kernel * 10, total) << kernel << " of " << total;
  EXPECT_GT((ours[{"spin", "spin_wide"}]), 500U);

  // Read as on another host (an empty --sysroot: the running kernel is not the recording's
  // there, and HOME's build-id cache is empty), the kernel's frames stay unnamed and the summary
  // says what names them; given a copy of the recording host's kallsyms, they are named as here.
  std::map<std::string, uint64_t> kernel_here;  // by function
  for (const RawLeaf& leaf : leaves) {
    if (leaf.file.starts_with("[kernel.kallsyms]")) kernel_here[leaf.function] += leaf.count;
  }
  const std::string kallsyms = dir + "/kallsyms";
  ASSERT_EQ(sh("cat /proc/kallsyms > " + quote(kallsyms)).status, 0);
  fs::create_directories(dir + "/elsewhere");
  const auto kernel_elsewhere = [&](const std::string& flags, std::string& summary) {
    std::map<std::string, uint64_t> out;
    const std::string profile = dir + "/elsewhere.pb.gz";
    RunResult e = sh(env + pdfix() + " export --sysroot " + quote(dir + "/elsewhere") + " " +
                     flags + " " + quote(dir + "/in.data") + " " + quote(profile));
    summary = e.err;
    EXPECT_EQ(e.status, 0) << e.err;
    e = sh(env +
           "go tool pprof -symbolize=none -raw -tagfocus='comm=^(spin|find|ls|sh|perf-exec)$' " +
           quote(profile) + " 2>&1");
    for (const RawLeaf& leaf : raw_leaves(e.out)) {
      if (leaf.file.starts_with("[kernel.kallsyms]")) out[leaf.function] += leaf.count;
    }
    return out;
  };
  std::string said;
  const std::map<std::string, uint64_t> unnamed = kernel_elsewhere("", said);
  ASSERT_EQ(unnamed.size(), 1U) << said;
  EXPECT_EQ(unnamed.begin()->first, "") << said;
  EXPECT_NE(said.find("[kernel.kallsyms]_text: not the running kernel; not in the build-id cache "
                      "(--kallsyms FILE)"),
            std::string::npos)
      << said;
  EXPECT_EQ(kernel_elsewhere("--kallsyms " + quote(kallsyms), said), kernel_here) << said;
  remove_test_dir(dir);
}

}  // namespace
}  // namespace pdfix::e2e
