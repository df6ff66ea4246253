// pdfix fix-module-sizes, judged by the machine's perf: what perf reads back from the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr uint16_t kKernel = 1;
constexpr uint32_t kHostPid = 0xffffffff;

struct PerfMap {
  uint64_t start = 0;
  uint64_t len = 0;
  std::string filename;
};

// The host kernel's module maps as perf prints them (pid -1, the kernel image left out).
std::vector<PerfMap> perf_module_maps(const std::string& path, const std::string& cat = "") {
  const std::string src = cat.empty() ? "-i " + quote(path) : "-i -";
  RunResult r =
      sh((cat.empty() ? "" : cat + " | ") + "perf script --show-mmap-events " + src + " 2>&1");
  static const std::regex line(
      R"(PERF_RECORD_MMAP2? -1/-?\d+: \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ [^\]]*\]: \S+ (\S+))");
  std::vector<PerfMap> maps;
  std::istringstream in(r.out);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (!std::regex_search(l, m, line) || m[3].str().starts_with("[kernel.kallsyms]")) continue;
    maps.push_back({std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16), m[3]});
  }
  return maps;
}

std::string perf_report(const std::string& path) {
  return sh("perf report --stdio --sort dso,sym -i " + quote(path) + " 2>/dev/null | grep -v '^#'")
      .out;
}

// Module-area ends, from the kernel sources (arch/x86/include/asm/pgtable_64_types.h MODULES_END;
// 32-bit x86 below __FIXADDR_TOP; arm: PAGE_OFFSET, the 16 MiB boundary above the modules).
uint64_t area_end(const std::string& arch, uint64_t start) {
  if (arch == "x86_64") return 0xffffffffff000000;
  if (arch == "i686") return 0xfffff000;
  if (arch.starts_with("arm")) return (start | 0xffffff) + 1;
  return UINT64_MAX;
}

// Every way a set of module maps can be impossible, as one message per fault.
std::vector<std::string> faults(std::vector<PerfMap> maps, const std::string& arch) {
  std::sort(maps.begin(), maps.end(),
            [](const PerfMap& a, const PerfMap& b) { return a.start < b.start; });
  std::vector<std::string> out;
  for (size_t i = 0; i < maps.size(); ++i) {
    const PerfMap& m = maps[i];
    const uint64_t end = m.start + m.len;
    if (end < m.start) out.push_back(m.filename + " wraps");
    if (end == UINT64_MAX) out.push_back(m.filename + " runs to the top of the address space");
    if (end > area_end(arch, m.start)) out.push_back(m.filename + " ends past the module area");
    if (i + 1 < maps.size() && end > maps[i + 1].start) {
      out.push_back(m.filename + " overlaps " + maps[i + 1].filename);
    }
  }
  return out;
}

std::string arch_of(const std::string& path) {
  std::smatch m;
  const std::string info = sh(pdfix() + " info " + quote(path)).out;
  static const std::regex re(R"(\n  arch +\d+ bytes +(\S+))");
  return std::regex_search(info, m, re) ? m[1].str() : "";
}

class FixModuleSizesTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FixModuleSizesTest, ForeignRecordingsEndUpWithPossibleModuleMaps) {
  int repaired = 0;
  for (const CorpusFile& f : corpus_files()) {
    if (f.must_be_refused || f.name.find("/quipper/") == std::string::npos) continue;
    const auto before = perf_module_maps(f.path);
    if (before.empty()) continue;
    const std::string arch = arch_of(f.path);
    const std::string out = dir_ + "/out.data";
    RunResult r = sh(pdfix() + " fix-module-sizes " + quote(f.path) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << f.name << ": " << r.err;
    const auto after = perf_module_maps(out);
    ASSERT_EQ(after.size(), before.size()) << f.name;
    EXPECT_EQ(faults(after, arch), std::vector<std::string>{}) << f.name;
    if (!faults(before, arch).empty()) {
      ++repaired;
      EXPECT_EQ(perf_stats(out), perf_stats(f.path)) << f.name;
      EXPECT_EQ(perf_report(out), perf_report(f.path)) << f.name;
    } else {
      EXPECT_NE(r.err.find("nothing to fix"), std::string::npos) << f.name << ": " << r.err;
      EXPECT_TRUE(same_file(out, f.path)) << f.name;
    }
  }
  // The x86_64, i686 and armv7 recordings of perf 3.4 each have a module running too far, and so
  // do the two x86_64 streams of perf 3.4, which carry no ARCH feature.
  EXPECT_GE(repaired, 5);
}

// The seed's s390x machine: modules at these addresses with these sizes (/proc/modules), their
// maps starting at .text, a little past each address, as perf records them on s390.
struct SeedModule {
  const char* name;
  uint64_t size;
  uint64_t address;
  uint64_t text_offset;
};
constexpr SeedModule kSeed[] = {{"qdio", 143360, 0x3ff80002000, 0x5d8},
                                {"vmur", 36864, 0x3ff80182000, 0x1a0},
                                {"ccwgroup", 24576, 0x3ff80218000, 0x3c8},
                                {"qeth", 266240, 0x3ff80296000, 0xb10},
                                {"qeth_l2", 86016, 0x3ff804d6000, 0x990}};

std::string seed_listing() {
  std::string text;
  for (const SeedModule& m : kSeed) {
    std::ostringstream line;
    line << m.name << " " << m.size << " 0 - Live 0x" << std::hex << m.address << "\n";
    text += line.str();
  }
  return text;
}

// What perf before 9ad4652b wrote: each module up to the next one's map, the last one to ~0.
testing::PerfDataBuilder seed_recording(bool pipe, bool compressed) {
  testing::PerfDataBuilder b(std::endian::big);
  if (pipe) b.pipe_mode();
  b.attr({});
  b.string_feature(3, "s390host").string_feature(6, "s390x").string_feature(4, "4.14.0");
  if (compressed) b.compress(81, 96);
  b.mmap(kHostPid, 0, 0x3ff80000000, 0x100000, "[kernel.kallsyms]_text", kKernel);
  for (size_t i = 0; i < std::size(kSeed); ++i) {
    const uint64_t start = kSeed[i].address + kSeed[i].text_offset;
    const uint64_t end =
        i + 1 < std::size(kSeed) ? kSeed[i + 1].address + kSeed[i + 1].text_offset : UINT64_MAX;
    b.mmap(kHostPid, start, end - start, 0,
           std::string("/lib/modules/4.14.0/kernel/drivers/s390/") + kSeed[i].name + ".ko",
           kKernel);
  }
  b.comm(7, 7, "qethconf").sample(0x3ff804d7000, 7, 7, 100, kKernel);
  return b;
}

void expect_seed_repaired(const std::vector<PerfMap>& maps) {
  ASSERT_EQ(maps.size(), std::size(kSeed));
  for (size_t i = 0; i < maps.size(); ++i) {
    EXPECT_EQ(maps[i].start + maps[i].len, kSeed[i].address + kSeed[i].size) << kSeed[i].name;
  }
}

TEST_F(FixModuleSizesTest, S390xSeedEndsEveryModuleAtAddressPlusSize) {
  const std::string listing = dir_ + "/modules";
  std::ofstream(listing) << seed_listing();
  const std::string in = testing::write_temp(seed_recording(false, false).build());
  const std::string out = dir_ + "/out.data";
  const auto seed_maps = perf_module_maps(in);
  ASSERT_FALSE(seed_maps.empty());
  ASSERT_EQ(seed_maps.back().len, 0xfffffc007fb2966f);  // the seed's own number

  RunResult r = sh(pdfix() + " fix-module-sizes --proc-modules " + quote(listing) + " " +
                   quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("5 of 5 module maps changed"), std::string::npos) << r.err;
  expect_seed_repaired(perf_module_maps(out));
  EXPECT_NE(sh(pdfix() + " info " + quote(out)).out.find("big-endian"), std::string::npos);

  // Only the five len fields differ.
  RunResult cmp = sh("cmp -l " + quote(in) + " " + quote(out) + " | wc -l");
  EXPECT_EQ(fs::file_size(in), fs::file_size(out));
  EXPECT_LE(std::stoi(cmp.out), 5 * 8);
  RunResult strip_lens = sh("perf script --show-mmap-events -i " + quote(in) +
                            " 2>&1 | sed -E 's/\\(0x[0-9a-f]+\\)//' > " + quote(dir_ + "/a") +
                            "; perf script --show-mmap-events -i " + quote(out) +
                            " 2>&1 | sed -E 's/\\(0x[0-9a-f]+\\)//' > " + quote(dir_ + "/b") +
                            "; cmp " + quote(dir_ + "/a") + " " + quote(dir_ + "/b"));
  EXPECT_EQ(strip_lens.status, 0) << strip_lens.out;
  fs::remove_all(fs::path(in).parent_path());
}

TEST_F(FixModuleSizesTest, S390xSeedThroughAPipeAndCompressed) {
  const std::string listing = dir_ + "/modules";
  std::ofstream(listing) << seed_listing();
  for (bool pipe : {true, false}) {
    SCOPED_TRACE(pipe ? "pipe" : "zstd file");
    const std::string in = testing::write_temp(seed_recording(pipe, !pipe).build());
    const std::string out = dir_ + "/out.data";
    // A pipe-mode stream through a pipe; a zstd file-mode recording on stdin.
    const std::string feed = pipe ? "cat " + quote(in) + " | " : "< " + quote(in) + " ";
    RunResult r = sh(feed + pdfix() + " fix-module-sizes --proc-modules " + quote(listing) +
                     " - - > " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    expect_seed_repaired(perf_module_maps(out, pipe ? "cat " + quote(out) : ""));
    fs::remove_all(fs::path(in).parent_path());
  }
}

TEST_F(FixModuleSizesTest, ListingOfAnotherBootIsNotUsed) {
  const std::string listing = dir_ + "/modules";
  std::ofstream(listing) << "qeth_l2 86016 0 - Live 0x3ff90000000\n";
  const std::string in = testing::write_temp(seed_recording(false, false).build());
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix-module-sizes --proc-modules " + quote(listing) + " " +
                   quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  // qeth_l2 falls back to the end of the s390x module area (4 TiB in this layout).
  const auto maps = perf_module_maps(out);
  ASSERT_EQ(maps.size(), std::size(kSeed));
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps.back().start + maps.back().len, uint64_t{1} << 42);
  EXPECT_NE(r.err.find("module area"), std::string::npos) << r.err;
  fs::remove_all(fs::path(in).parent_path());
}

// Linux 6.4+: /proc/modules sizes cover every memory region, so a map made from one can run over
// the next module.
testing::PerfDataBuilder overlapping_recording() {
  testing::PerfDataBuilder b;
  b.attr({});
  b.string_feature(3, "host").string_feature(6, "x86_64").string_feature(4, "6.5.0");
  b.mmap(kHostPid, 0xffffffff81000000, 0x1200000, 0xffffffff81000000, "[kernel.kallsyms]_text",
         kKernel);
  b.mmap(kHostPid, 0xffffffffc0000000, 0x9000, 0, "/lib/modules/6.5.0/kernel/a.ko", kKernel);
  b.mmap(kHostPid, 0xffffffffc0008000, 0x3000, 0, "/lib/modules/6.5.0/kernel/b.ko", kKernel);
  b.comm(7, 7, "x").sample(0xffffffffc0000100, 7, 7, 100, kKernel);
  return b;
}

TEST_F(FixModuleSizesTest, OverlapIsClampedToTheNextModule) {
  const std::string listing = dir_ + "/modules";
  std::ofstream(listing) << "a 36864 0 - Live 0xffffffffc0000000\nb 12288 0 - Live "
                            "0xffffffffc0008000\n";
  const std::string in = testing::write_temp(overlapping_recording().build());
  for (const std::string& flags : {std::string(), "--proc-modules " + quote(listing)}) {
    SCOPED_TRACE(flags);
    const std::string out = dir_ + "/out.data";
    RunResult r = sh(pdfix() + " fix-module-sizes " + flags + " " + quote(in) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto maps = perf_module_maps(out);
    ASSERT_EQ(maps.size(), 2u)
        << sh("perf script --show-mmap-events -i " + quote(out) + " 2>&1").out;
    EXPECT_EQ(maps[0].len, 0x8000u);
    EXPECT_EQ(maps[1].len, 0x3000u);
    EXPECT_NE(r.err.find("overlaps the next module, b"), std::string::npos) << r.err;
  }
  // The same report for scripts, on stdout.
  RunResult json =
      sh(pdfix() + " fix-module-sizes --json " + quote(in) + " " + quote(dir_ + "/json.data") +
         " | python3 -c 'import json, sys; r = json.load(sys.stdin); "
         "c = r[\"changed\"][0]; print(r[\"module_maps\"], c[\"filename\"], "
         "c[\"start\"], c[\"old_len\"], c[\"new_len\"])'");
  EXPECT_EQ(json.out, "2 /lib/modules/6.5.0/kernel/a.ko 0xffffffffc0000000 0x9000 0x8000\n")
      << json.err;
  fs::remove_all(fs::path(in).parent_path());
}

// A relocatable object shaped like a module: 5000 bytes of text, 100 of rodata, 10 of data and
// 3000 of bss. The loader gives text two pages, rodata one, data and bss one: 16 KiB.
constexpr uint64_t kModuleLoaded = 4 * 4096;

void make_module(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  const std::string src = path + ".s";
  std::ofstream(src) << ".section .text\n.skip 5000\n.section .rodata,\"a\"\n.skip 100\n"
                        ".data\n.skip 10\n.bss\n.skip 3000\n";
  ASSERT_EQ(sh("as -o " + quote(path) + " " + quote(src)).status, 0);
  fs::remove(src);
}

testing::PerfDataBuilder recording_with_last_module(const std::string& name) {
  testing::PerfDataBuilder b;
  b.attr({});
  b.string_feature(3, "host").string_feature(6, "x86_64").string_feature(4, "6.1.0-test");
  b.mmap(kHostPid, 0xffffffff81000000, 0x1200000, 0xffffffff81000000, "[kernel.kallsyms]_text",
         kKernel);
  b.mmap(kHostPid, 0xffffffffc0000000, 0x5000, 0, "/lib/modules/6.1.0-test/kernel/a.ko", kKernel);
  b.mmap(kHostPid, 0xffffffffc0010000, 0 - 0xffffffffc0010000 - 1, 0, name, kKernel);
  return b;
}

TEST_F(FixModuleSizesTest, ModuleFilesGiveTheirSizeCompressedOrNot) {
  const std::string root = dir_ + "/root";
  const std::string ko = root + "/lib/modules/6.1.0-test/kernel/drivers/foo.ko";
  make_module(ko);
  ASSERT_EQ(
      sh("xz -k " + quote(ko) + " && gzip -k " + quote(ko) + " && zstd -q -k " + quote(ko)).status,
      0);
  struct Case {
    std::string map_name;
    std::string flags;
  };
  const std::vector<Case> cases = {
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko", "--sysroot " + quote(root)},
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko.xz", "--sysroot " + quote(root)},
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko.gz", "--sysroot " + quote(root)},
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko.zst", "--sysroot " + quote(root)},
      // By name: [foo] under the sysroot's /lib/modules/<osrelease>, and under --modules-dir.
      {"[foo]", "--sysroot " + quote(root)},
      {"/elsewhere/foo.ko", "--modules-dir " + quote(root + "/lib/modules")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.map_name + " " + c.flags);
    const std::string in = testing::write_temp(recording_with_last_module(c.map_name).build());
    const std::string out = dir_ + "/out.data";
    RunResult r = sh(pdfix() + " fix-module-sizes " + c.flags + " " + quote(in) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto maps = perf_module_maps(out);
    ASSERT_EQ(maps.size(), 2u);
    EXPECT_EQ(maps[1].len, kModuleLoaded);
    EXPECT_NE(r.err.find("module file"), std::string::npos) << r.err;
    fs::remove_all(fs::path(in).parent_path());
  }
}

// Module files among the finder's other candidates: under a --search root (a container's or a
// chroot's, so only by carrying the id the recording names) and in perf's build-id cache.
TEST_F(FixModuleSizesTest, ModuleFilesUnderASearchRootOrInTheCacheCountByTheirBuildId) {
  const std::string root = dir_ + "/root";
  const std::string ko = root + "/lib/modules/6.1.0-test/kernel/drivers/foo.ko";
  make_module(ko + ".o");
  ASSERT_EQ(sh("ld -r --build-id=sha1 -o " + quote(ko) + " " + quote(ko + ".o")).status, 0);
  fs::remove(ko + ".o");
  const std::string hex = own_id(ko);
  ASSERT_EQ(hex.size(), 40u);
  testing::Bytes id;
  for (size_t i = 0; i < hex.size(); i += 2) {
    id.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  const std::string cache = dir_ + "/cache";
  const std::string entry = cache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  fs::create_directories(entry);
  fs::copy_file(ko, entry + "/elf");
  struct Case {
    std::string map_name;
    bool names_id;
    std::string env;
    std::string flags;
    bool found;
  };
  const std::string empty_cache = "PERF_BUILDID_DIR=" + quote(dir_ + "/none") + " ";
  fs::create_directories(dir_ + "/empty-root");
  const std::vector<Case> cases = {
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko", true, empty_cache,
       "--search " + quote(root), true},
      {"[foo]", true, empty_cache, "--search " + quote(root), true},
      // A module under a search root that the recording names no id for: no evidence.
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko", false, empty_cache,
       "--search " + quote(root), false},
      {"[foo]", false, empty_cache, "--search " + quote(root), false},
      // With a --sysroot that lacks it, the --search roots are looked under too.
      {"/lib/modules/6.1.0-test/kernel/drivers/foo.ko", true, empty_cache,
       "--sysroot " + quote(dir_ + "/empty-root") + " --search " + quote(root), true},
      {"[foo]", true, empty_cache,
       "--sysroot " + quote(dir_ + "/empty-root") + " --search " + quote(root), true},
      // By its id in the cache, whatever its path.
      {"/elsewhere/foo.ko", true, "PERF_BUILDID_DIR=" + quote(cache) + " ", "", true},
      {"/elsewhere/foo.ko", true, empty_cache, "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.map_name + " " + c.env + c.flags + (c.names_id ? " (id named)" : ""));
    auto b = recording_with_last_module(c.map_name);
    if (c.names_id) b.build_id_entry(kKernel | 0x8000, -1, id, c.map_name);
    const std::string in = testing::write_temp(b.build());
    const std::string out = dir_ + "/out.data";
    RunResult r =
        sh(c.env + pdfix() + " fix-module-sizes " + c.flags + " " + quote(in) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto maps = perf_module_maps(out);
    ASSERT_EQ(maps.size(), 2u);
    if (c.found) {
      EXPECT_EQ(maps[1].len, kModuleLoaded);
      EXPECT_NE(r.err.find("module file"), std::string::npos) << r.err;
    } else {
      EXPECT_EQ(maps[1].start + maps[1].len, 0xffffffffff000000);
      EXPECT_EQ(r.err.find("module file"), std::string::npos) << r.err;
    }
    fs::remove_all(fs::path(in).parent_path());
  }
}

TEST_F(FixModuleSizesTest, ModuleFileOfAnotherBuildIsNoEvidence) {
  const std::string root = dir_ + "/root";
  make_module(root + "/lib/modules/6.1.0-test/kernel/foo.ko");
  // The recording says foo had a build-id; the file at hand has none.
  auto b = recording_with_last_module("/lib/modules/6.1.0-test/kernel/foo.ko");
  b.build_id_entry(kKernel | 0x8000, -1, testing::Bytes(20, 0xab),
                   "/lib/modules/6.1.0-test/kernel/foo.ko");
  const std::string in = testing::write_temp(b.build());
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix-module-sizes --sysroot " + quote(root) + " " + quote(in) + " " +
                   quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto maps = perf_module_maps(out);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[1].start + maps[1].len, 0xffffffffff000000);
  EXPECT_EQ(r.err.find("module file"), std::string::npos) << r.err;
  fs::remove_all(fs::path(in).parent_path());
}

TEST_F(FixModuleSizesTest, SaneRecordingIsNothingToFixAndByteIdentical) {
  const std::string in = corpus_dir() + "/sleep-B.data";
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix-module-sizes " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("nothing to fix"), std::string::npos) << r.err;
  EXPECT_TRUE(same_file(in, out));
}

TEST_F(FixModuleSizesTest, RepairIsIdempotent) {
  const std::string in = foreign_corpus_dir() + "/quipper/perf.data.i686-3.4";
  const std::string once = dir_ + "/once.data", twice = dir_ + "/twice.data";
  ASSERT_EQ(sh(pdfix() + " fix-module-sizes " + quote(in) + " " + quote(once)).status, 0);
  RunResult r = sh(pdfix() + " fix-module-sizes " + quote(once) + " " + quote(twice));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("nothing to fix"), std::string::npos) << r.err;
  EXPECT_TRUE(same_file(once, twice));
}

TEST_F(FixModuleSizesTest, MalformedListingIsAClearErrorAndNoOutput) {
  const std::string listing = dir_ + "/modules";
  std::ofstream(listing) << "qeth_l2 86016 0 - Live 0x3ff804d6000\nqeth lots\n";
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " fix-module-sizes --proc-modules " + quote(listing) + " " +
                   quote(corpus_dir() + "/sleep-B.data") + " " + quote(out));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace pdfix::e2e
