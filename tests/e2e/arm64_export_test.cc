// pdfix export of the arm64 corpus (e2e/arm64_test.cc says how it was made), here on x86-64 with
// the VM's sysroot: the DWARF recordings unwound on the way, the -B and pipe ones proven by the
// sysroot alone. Go's pprof reads every profile; each sample's user leaf is named as the VM's perf
// named it (its `perf script`), by binary and function, on >= 99% of the samples it named (names
// of one address in the binary's symbols agree). The corpus holds no kallsyms of the VM's kernel:
// its frames stay unnamed, and the summary says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "e2e/harness.h"
#include "e2e/leaf_names.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = corpus_dir() + "/arm64";

TEST(Arm64Export, EveryUserLeafIsNamedAsTheVmsPerfNamedIt) {
  ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
  const std::string dir = temp_dir();
  ASSERT_EQ(sh("tar -xJSf " + quote(kCorpus + "/sysroot.tar.xz") + " -C " + quote(dir)).status, 0);
  const std::string env = "HOME=" + quote(dir) + " ";
  // Judged over the corpus: a recording of a few dozen user samples misses 99% by one sample.
  uint64_t all_agree = 0;
  uint64_t all_named = 0;
  std::ostringstream all_differ;
  for (const std::string name : {"dwarf-pac", "dwarf-nopac", "dwarf-python", "dwarf-shell",
                                 "modules", "modules-B", "pipe-B"}) {
    SCOPED_TRACE(name);
    const std::string out = dir + "/" + name + ".pb.gz";
    RunResult r = sh(env + pdfix() + " export --json --sysroot " + quote(dir) + " " +
                     quote(kCorpus + "/" + name + ".data") + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const llvm::json::Object summary = parse_object(r.out);
    r = sh(env + "go tool pprof -symbolize=none -raw " + quote(out) + " 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
    const std::vector<RawLeaf> leaves = raw_leaves(r.out);

    // The aliases in the sysroot's files and their debug files, by build-id.
    Aliases aliases;
    std::set<std::string> files;
    for (const RawLeaf& leaf : leaves) files.insert(leaf.file);
    for (const std::string& file : files) {
      if (file.empty() || file.starts_with("[") || !fs::exists(dir + file)) continue;
      std::string nm = sh("llvm-nm-19 -a --defined-only " + quote(dir + file) + " 2>/dev/null").out;
      nm += sh("llvm-nm-19 -D --defined-only " + quote(dir + file) + " 2>/dev/null").out;
      const std::string id = own_id(dir + file);
      const std::string debug = dir + "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" +
                                id.substr(std::min<size_t>(2, id.size())) + ".debug";
      if (id.size() > 2 && fs::exists(debug)) {
        nm += sh("llvm-nm-19 -a --defined-only " + quote(debug) + " 2>/dev/null").out;
      }
      aliases.add(dso_of(file), nm);
    }
    LeafCounts ours;
    uint64_t ours_total = 0;
    for (const RawLeaf& leaf : leaves) {
      const std::string dso = dso_of(leaf.file);
      ours[{dso, aliases.canonical(dso, leaf.function)}] += leaf.count;
      ours_total += leaf.count;
    }

    // The VM's perf script: a sample's line, then its frames, leaf first ("ADDRESS SYM (DSO)").
    r = sh("xz -dc " + quote(kCorpus + "/" + name + ".script.xz"));
    ASSERT_EQ(r.status, 0);
    LeafCounts vms;
    uint64_t samples = 0;
    uint64_t user_named = 0;
    const std::regex frame(R"(^\s+[0-9a-f]+ (.+) \((.*)\)$)");
    std::istringstream lines(r.out);
    bool leaf_next = false;
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] != '\t' && line[0] != ' ') {
        ++samples;
        leaf_next = true;
        continue;
      }
      std::smatch m;
      if (!leaf_next || !std::regex_match(line, m, frame)) continue;
      leaf_next = false;
      const std::string dso = dso_of(m[2]);
      if (dso.starts_with("[") || m[1] == "[unknown]") continue;
      vms[{dso, aliases.canonical(dso, m[1])}] += 1;
      ++user_named;
    }
    EXPECT_EQ(ours_total, samples);
    const auto [agree, differ] = agreement(vms, ours);
    std::cout << name << ": " << agree << " of the " << user_named
              << " user leaves the VM's perf named, named alike, of " << samples << " samples\n";
    EXPECT_GT(user_named, 0u);
    all_agree += agree;
    all_named += user_named;
    all_differ << name << ": " << differ;
    // The kernel's frames: unnamed, and why.
    for (const llvm::json::Value& v : *summary.getArray("leaves_by_mapping")) {
      const llvm::json::Object& o = *v.getAsObject();
      if (o.getString("file").value_or("").starts_with("[kernel.kallsyms]")) {
        EXPECT_NE(o.getString("problem").value_or(""), "") << name;
      }
    }
  }
  std::cout << all_agree << " of the " << all_named
            << " user leaves the VM's perf named, named alike\n";
  // What perf names and export does not: PLT stubs (perf makes their names, foo@plt, from the
  // relocations; LLVM's symbolizer has none).
  EXPECT_GE(all_agree * 100, all_named * 99) << all_differ.str();
  remove_test_dir(dir);
}

}  // namespace
}  // namespace pdfix::e2e
