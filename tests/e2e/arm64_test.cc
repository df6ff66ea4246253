// The arm64 corpus (corpora/arm64, recorded by scripts/arm64/make-corpus.sh in a Debian 12 arm64
// VM with pointer authentication on): another host's and another architecture's recordings, fixed
// and unwound here with its sysroot of slim copies, and judged by what the VM's own perf and
// binutils said there, and by the binaries' instructions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "e2e/call_sites.h"
#include "e2e/harness.h"
#include "e2e/perf_frames.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = corpus_dir() + "/arm64";

// The VM's files, unpacked once per run from the corpus's sysroot.tar.xz (slim copies are sparse:
// tar keeps the holes), and removed when the tests end. Not a temp_dir(): that is removed when
// the test that made it ends, and the tests after it in the same process found no sysroot.
const std::string& sysroot() {
  struct Unpacked {
    std::string dir = [] {
      std::string t = (fs::path(::testing::TempDir()) / "pdfix-e2e-XXXXXX").lexically_normal();
      EXPECT_NE(mkdtemp(t.data()), nullptr) << t;
      return t;
    }();
    Unpacked() {
      RunResult r = sh("tar -xJSf " + quote(kCorpus + "/sysroot.tar.xz") + " -C " + quote(dir));
      EXPECT_EQ(r.status, 0) << r.err;
    }
    ~Unpacked() { fs::remove_all(dir); }
  };
  static const Unpacked unpacked;
  return unpacked.dir;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The kernel's build-id, from the VM's /sys/kernel/notes: ELF notes, little-endian.
std::string kernel_id() {
  const std::string notes = read_text(kCorpus + "/kernel-notes.bin");
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, notes.data() + at, 4);
    return v;
  };
  for (size_t at = 0; at + 12 <= notes.size();) {
    const uint32_t namesz = u32(at), descsz = u32(at + 4), type = u32(at + 8);
    const size_t name = at + 12, desc = name + ((namesz + 3) & ~3U);
    if (desc + descsz > notes.size()) break;
    if (type == 3 && namesz == 4 && notes.compare(name, 4, std::string("GNU\0", 4)) == 0) {
      std::string hex;
      for (size_t i = 0; i < descsz; ++i) {
        static constexpr char kDigits[] = "0123456789abcdef";
        const auto b = static_cast<uint8_t>(notes[desc + i]);
        hex += kDigits[b >> 4];
        hex += kDigits[b & 15];
      }
      return hex;
    }
    at = desc + ((descsz + 3) & ~3U);
  }
  ADD_FAILURE() << "no GNU build-id note in kernel-notes.bin";
  return "";
}

// What the VM said of a recording's files: "ID PATH" lines, of every mapped file by readelf
// (NAME.maps) and of those with samples by perf buildid-list after perf inject -b (NAME.buildids).
std::map<std::string, std::string> vm_ids(const std::string& name) {
  std::map<std::string, std::string> ids;
  for (const char* kind : {".maps", ".buildids"}) {
    std::istringstream lines(read_text(kCorpus + "/" + name + kind));
    for (std::string id, path; lines >> id >> path;) {
      auto [it, added] = ids.try_emplace(path, id);
      EXPECT_EQ(it->second, id) << name << ": the VM gave " << path << " two ids";
    }
  }
  return ids;
}

const std::vector<std::string> kRecordings = {
    "dwarf-pac", "dwarf-nopac", "dwarf-python", "dwarf-shell", "modules-B", "pipe-B", "modules"};

class Arm64Corpus : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kCorpus + "/dwarf-pac.data")) << kCorpus;
    dir_ = temp_dir();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Every map of a file gets the id the VM read from that very file; the kernel's from its notes.
// The -B recordings carry no id at all: only the sysroot, declared the recording host's root,
// can prove them from here.
TEST_F(Arm64Corpus, FixPutsTheVmsIdOnEveryMap) {
  const std::string kernel = kernel_id();
  ASSERT_EQ(kernel.size(), 40U);
  size_t judged = 0;
  for (const std::string& name : kRecordings) {
    SCOPED_TRACE(name);
    const std::map<std::string, std::string> truth = vm_ids(name);
    ASSERT_FALSE(truth.empty());
    const std::string out = dir_ + "/" + name + ".data";
    RunResult fix = sh(pdfix() + " fix --sysroot " + quote(sysroot()) +
                       " --known-build-ids '[kernel.kallsyms]=" + kernel + "' " +
                       quote(kCorpus + "/" + name + ".data") + " " + quote(out));
    ASSERT_EQ(fix.status, 0) << fix.err;
    size_t maps = 0;
    for (const MapRecord& m : maps_of(out)) {
      if (m.filename.starts_with("[kernel.kallsyms]")) {
        EXPECT_EQ(m.build_id, kernel);
        continue;
      }
      auto want = truth.find(m.filename);
      if (m.filename == "[vdso]" && name.ends_with("-B")) {
        // The VM's vdso: without perf's table nothing here can tell its id, and none is guessed.
        EXPECT_EQ(m.build_id, "") << "pid " << m.pid;
        continue;
      }
      if (want == truth.end()) {
        // //anon, [vdso] of a -B recording, a file readelf found no id in: none to give.
        EXPECT_EQ(m.build_id, "") << m.filename << " pid " << m.pid;
        continue;
      }
      ++maps;
      EXPECT_EQ(m.build_id, want->second) << m.filename << " pid " << m.pid;
      ++judged;
    }
    EXPECT_GT(maps, 0U);
  }
  std::cout << judged << " maps of files judged against the VM's ids, in " << kRecordings.size()
            << " recordings\n";
}

// On arm64 the modules lie below the kernel image, so perf 6.1 gave the image, not the last module,
// the rest of the address space: the VM's module maps are right, and fix-module-sizes keeps them.
// Made to run to the top as perf does on x86-64 (the record's len patched here), the last module's
// map gets the VM's /proc/modules size back from the listing, and from its slim .ko in the sysroot
// (the layout of its allocated sections) without one.
TEST_F(Arm64Corpus, ModuleMapsTakeTheVmsModuleListing) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> listing;  // name -> (address, size)
  std::istringstream lines(read_text(kCorpus + "/modules.txt"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string name, size, refs, users, state, address;
    w >> name >> size >> refs >> users >> state >> address;
    listing[name] = {std::stoull(address, nullptr, 16), std::stoull(size)};
  }
  ASSERT_FALSE(listing.empty());
  // A module map against the listing: its start and extent, by the module's name.
  auto expect_listed = [&](const std::string& path, size_t* n) {
    for (const llvm::json::Object& o : records_of(path)) {
      const auto file = o.getString("filename");
      if (!file || !file->ends_with(".ko")) continue;
      std::string name = file->rsplit('/').second.drop_back(3).str();
      std::replace(name.begin(), name.end(), '-', '_');
      auto it = listing.find(name);
      ASSERT_NE(it, listing.end()) << name;
      EXPECT_EQ(std::stoull(o.getString("start")->str(), nullptr, 16), it->second.first) << name;
      EXPECT_EQ(std::stoull(o.getString("len")->str(), nullptr, 16), it->second.second) << name;
      ++*n;
    }
  };
  for (const std::string name : {"modules-B", "modules", "pipe-B"}) {
    SCOPED_TRACE(name);
    const std::string out = dir_ + "/" + name + ".data";
    RunResult r =
        sh(pdfix() + " fix-module-sizes --json --proc-modules " + quote(kCorpus + "/modules.txt") +
           " " + quote(kCorpus + "/" + name + ".data") + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const llvm::json::Object report = parse_object(r.out);
    EXPECT_EQ(report.getArray("changed")->size(), 0U) << r.out;
    size_t n = 0;
    expect_listed(out, &n);
    EXPECT_GT(n, 10U);
  }

  // The highest module's map, run to the top of the address space.
  const std::string runaway = dir_ + "/runaway.data";
  fs::copy_file(kCorpus + "/modules-B.data", runaway);
  uint64_t top = 0, at = 0;
  for (const llvm::json::Object& o : records_of(runaway)) {
    const auto file = o.getString("filename");
    if (!file || !file->ends_with(".ko")) continue;
    const uint64_t start = std::stoull(o.getString("start")->str(), nullptr, 16);
    if (start > top) {
      top = start;
      at = std::stoull(o.getString("offset")->str(), nullptr, 16);
    }
  }
  ASSERT_NE(at, 0U);
  {
    std::fstream f(runaway, std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t len = 0 - top;  // header 8, pid 4, tid 4, start 8: len is at 24
    f.seekp(static_cast<std::streamoff>(at + 24));
    f.write(reinterpret_cast<const char*>(&len), 8);
  }
  for (const std::string& evidence :
       {"--proc-modules " + quote(kCorpus + "/modules.txt"), "--sysroot " + quote(sysroot())}) {
    SCOPED_TRACE(evidence);
    const std::string out = dir_ + "/repaired.data";
    RunResult r = sh(pdfix() + " fix-module-sizes --json " + evidence + " " + quote(runaway) + " " +
                     quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(parse_object(r.out).getArray("changed")->size(), 1U) << r.out;
    size_t n = 0;
    expect_listed(out, &n);
    fs::remove(out);
  }
}

// Every caller pdfix unwinds is a call site in its binary (the instruction before the return
// address is a BL or BLR, of any kind), as deep as the VM's perf went, through the signed return
// addresses of the program built with branch protection; a sample in the leaf has its caller
// from LR.
TEST_F(Arm64Corpus, UnwoundCallersAreCallSitesAsDeepAsTheVmsPerf) {
  for (const std::string name : {"dwarf-pac", "dwarf-nopac", "dwarf-python", "dwarf-shell"}) {
    SCOPED_TRACE(name);
    const std::string out = dir_ + "/" + name + ".data";
    RunResult r = sh(pdfix() + " unwind --sysroot " + quote(sysroot()) + " " +
                     quote(kCorpus + "/" + name + ".data") + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const std::vector<Sample> vm =
        samples_of(sh("xz -dc " + quote(kCorpus + "/" + name + ".script.xz")).out);
    const std::vector<Sample> ours = frames(out, sysroot());
    const Judgement j = judge(vm, ours, nullptr, sysroot());
    std::cout << name << ": " << j.as_deep << " of " << j.samples
              << " samples as deep as the VM's perf, " << j.callers << " callers, " << j.bad_callers
              << " not after a call, " << j.direct_calls << " direct calls' targets judged\n";
    EXPECT_EQ(j.bad_callers, 0U) << j.example;
    EXPECT_GT(j.callers, 0U);
    // The corpus is fixed: every sample, not a share.
    EXPECT_EQ(j.as_deep, j.samples) << j.example;
    if (name == "dwarf-pac" || name == "dwarf-nopac") {
      // leaf saves no frame: its caller (mid, or mid's caller where mid tail-calls it: the
      // referee above judged the call) can only have come from LR.
      size_t in_leaf = 0, from_lr = 0;
      for (const Sample& sample : ours) {
        const auto f = CallSites::user_frames(sample);
        size_t i = 0;
        while (i < sample.size() && (i == 0 || CallSites::kernel_frame(sample[i]))) ++i;
        if (f.size() < 2 || i + 1 >= sample.size()) continue;
        if (sample[i].find(" leaf (") == std::string::npos) continue;
        ++in_leaf;
        from_lr += sample[i + 1].find("(/opt/corpus/work-") != std::string::npos;
      }
      EXPECT_GT(in_leaf, 50U);
      EXPECT_EQ(from_lr, in_leaf);
      // Deeper than perf where it matters: every sample of the program reaches libc's start,
      // through the signed return addresses too, which the VM's perf 6.1 stops at (it reaches
      // main in none of the signed program's samples).
      size_t program = 0, started = 0, perf_main = 0;
      for (const Sample& sample : ours) {
        const bool in_program =
            absl::StrContains(absl::StrJoin(sample, "\n"), "(/opt/corpus/work-");
        program += in_program;
        started +=
            in_program && absl::StrContains(absl::StrJoin(sample, "\n"), "__libc_start_main");
      }
      for (const Sample& sample : vm)
        perf_main += absl::StrContains(absl::StrJoin(sample, "\n"), " main (");
      EXPECT_GT(program, 100U);
      EXPECT_EQ(started, program);
      std::cout
          << name << ": " << started << " of " << program
          << " samples of the program unwound to __libc_start_main; the VM's perf reached main"
          << " in " << perf_main << "\n";
    }
  }
  // The VM signed return addresses: its CPU had pointer authentication, and the program built
  // with branch protection signs LR in every function that saves it.
  EXPECT_NE(read_text(kCorpus + "/cpu-features.txt").find("paca"), std::string::npos);
  RunResult pac = sh("llvm-objdump-19 -d " + quote(sysroot() + "/opt/corpus/work-pac") +
                     " | grep -c -w paciasp");
  EXPECT_GE(std::stoi(pac.out), 2) << pac.err;
  RunResult nopac = sh("llvm-objdump-19 -d " + quote(sysroot() + "/opt/corpus/work-nopac") +
                       " | grep -c -w paciasp");
  EXPECT_EQ(nopac.out, "0\n");
}

// node's jitdump from the VM, a copy given with --jit-dir: its code becomes an aarch64 ELF file
// with a build-id, and perf names the JavaScript the VM's perf could only show as [JIT] addresses.
TEST_F(Arm64Corpus, NodesJitdumpBecomesAnAarch64ElfPerfNames) {
  const std::string out = dir_ + "/jit.data";
  const std::string env = "HOME=" + quote(dir_) + " ";
  RunResult fix =
      sh(env + pdfix() + " fix --json --sysroot " + quote(sysroot()) + " --jit-dir " +
         quote(kCorpus + "/jit") + " " + quote(kCorpus + "/jit/jit.data") + " " + quote(out));
  ASSERT_EQ(fix.status, 0) << fix.err;
  RunResult elf = sh("find " + quote(dir_ + "/.debug") +
                     " -name elf -path '*jitted*' -exec readelf -h {} + | grep -c AArch64");
  EXPECT_EQ(elf.out, "1\n") << elf.err;
  EXPECT_NE(read_text(kCorpus + "/jit/jit.report").find("[JIT] tid"), std::string::npos);
  RunResult report =
      sh(env + "perf report -i " + quote(out) + " --stdio --no-children --sort sym 2>/dev/null");
  ASSERT_EQ(report.status, 0);
  EXPECT_NE(report.out.find("LazyCompile:* [eval]:1"), std::string::npos) << report.out;
}

// What the analysis host does with the arm64 DWARF recording: fix --unwind --archive there (with
// the sysroot), unpack on x86-64, and read it with perf 6.1 and hotspot's perfparser by the
// commands unpack prints: both name the program's functions, leaf below mid below top.
TEST_F(Arm64Corpus, TheUnpackedBundleIsReadByPerfAndHotspot) {
  const std::string bundle = dir_ + "/pac.tar.zst";
  const std::string env = "HOME=" + quote(dir_) + " ";
  RunResult fix =
      sh(env + pdfix() + " fix --unwind --sysroot " + quote(sysroot()) +
         " --known-build-ids '[kernel.kallsyms]=" + kernel_id() + "' --archive " + quote(bundle) +
         " " + quote(kCorpus + "/dwarf-pac.data") + " " + quote(dir_ + "/fixed.data"));
  ASSERT_EQ(fix.status, 0) << fix.err;
  RunResult unpack = sh(env + pdfix() + " unpack " + quote(bundle) + " " + quote(dir_ + "/u"));
  ASSERT_EQ(unpack.status, 0) << unpack.err;
  std::istringstream lines(unpack.out);
  std::string report_command, perfparser_command;
  std::getline(lines, report_command);
  std::getline(lines, perfparser_command);
  ASSERT_TRUE(report_command.starts_with("perf --buildid-dir ")) << unpack.out;
  std::string as_script = report_command;
  as_script.replace(as_script.find(" report "), 8, " script -F ip,sym,dso ");
  RunResult script = sh(env + as_script + " 2>/dev/null");
  ASSERT_EQ(script.status, 0) << script.err;
  const std::vector<std::string> samples = script_samples(script.out);
  size_t nested = 0;
  for (const std::string& s : samples) {
    const size_t leaf = s.find(" leaf ("), mid = s.find(" mid ("), top = s.find(" top (");
    nested += leaf != std::string::npos && mid != std::string::npos && top != std::string::npos &&
              leaf < mid && mid < top;
  }
  EXPECT_GT(nested * 2, samples.size()) << script.out.substr(0, 3000);

  ASSERT_FALSE(hotspot_perfparser().empty());
  ASSERT_TRUE(perfparser_command.starts_with("hotspot-perfparser ")) << unpack.out;
  std::string parser = perfparser_command;
  parser.replace(0, std::string("hotspot-perfparser").size(), hotspot_perfparser());
  RunResult parsed = sh(parser + " --output " + quote(dir_ + "/parsed.bin") + " 2>/dev/null");
  ASSERT_EQ(parsed.status, 0) << parsed.err;
  for (const char* name : {"leaf", "mid", "top"}) {
    EXPECT_EQ(sh("grep -c -a " + std::string(name) + " " + quote(dir_ + "/parsed.bin")).status, 0)
        << name;
  }
  std::cout << nested << " of " << samples.size()
            << " samples named leaf < mid < top by perf from the unpacked bundle\n";
}

}  // namespace
}  // namespace pdfix::e2e
