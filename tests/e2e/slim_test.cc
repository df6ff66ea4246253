// Slim bundles (store/slim_elf.h) judged by their readers: the machine's perf and hotspot's
// perfparser print the same from a slim bundle as from a --with-code bundle of the same recording,
// where this host's copies of the binaries cannot stand in (libLLVM and the debug files hidden
// by mounts in a mount namespace of their own, the test's programs deleted).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/harness.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr char kLibLlvm[] = "/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1";

// A non-PIE program (perf places its symbols and source lines by section offsets) that spends
// its time in its own code and in libc's (named, with source lines, from libc6-dbg's file).
constexpr char kSortProgram[] = R"(#include <stdlib.h>
#include <string.h>
static int compare(const void* a, const void* b) {
  return memcmp(a, b, 24);
}
__attribute__((noinline)) static unsigned mix(unsigned x) {
  for (int i = 0; i < 64; ++i) x = x * 2654435761u + (x >> 7);
  return x;
}
int main(void) {
  enum { kRows = 20000 };
  static char rows[kRows][24];
  unsigned seed = 1;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < kRows; ++i) {
      seed = mix(seed);
      memset(rows[i], 'a' + seed % 26, 23);
      rows[i][23] = 0;
    }
    qsort(rows, kRows, sizeof rows[0], compare);
  }
  return rows[0][0] == 0;
}
)";

class SlimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    fs::create_directories(dir_ + "/home");
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // `command` recorded with `record_options`, then fixed: dir_/fixed.data.
  void record(const std::string& record_options, const std::string& command) {
    RunResult r = sh(env_ + "perf record -q " + record_options + " -o " + quote(dir_ + "/in.data") +
                     " -- " + command + " >/dev/null");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh(env_ + pdfix() + " fix " + quote(dir_ + "/in.data") + " " + quote(dir_ + "/fixed.data"));
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // The fixed recording archived slim (dir_/s) and with code (dir_/w), and unpacked.
  void archive_both() {
    slim_ = sh(env_ + pdfix() + " archive " + quote(dir_ + "/fixed.data") + " " +
               quote(dir_ + "/slim.tar.zst"));
    ASSERT_EQ(slim_.status, 0) << slim_.err;
    RunResult r = sh(env_ + pdfix() + " archive --with-code " + quote(dir_ + "/fixed.data") + " " +
                     quote(dir_ + "/whole.tar.zst"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("slim"), std::string::npos) << r.err;
    unpacked_slim_ =
        sh(env_ + pdfix() + " unpack " + quote(dir_ + "/slim.tar.zst") + " " + quote(dir_ + "/s"));
    ASSERT_EQ(unpacked_slim_.status, 0) << unpacked_slim_.err;
    r = sh(env_ + pdfix() + " unpack " + quote(dir_ + "/whole.tar.zst") + " " + quote(dir_ + "/w"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("slim"), std::string::npos) << r.err;
  }

  double size_ratio() const {
    return static_cast<double>(fs::file_size(dir_ + "/slim.tar.zst")) /
           static_cast<double>(fs::file_size(dir_ + "/whole.tar.zst"));
  }

  // `command` where this host's libLLVM is an empty file and /usr/lib/debug an empty directory:
  // perf and hotspot find them only in the bundle. A refused mount fails the test.
  std::string hidden(const std::string& command) const {
    RunResult r = sh("unshare -m sh -c " +
                     quote(std::string("mount --bind /dev/null ") + kLibLlvm +
                           " && mount -t tmpfs none /usr/lib/debug && " + env_ + command));
    EXPECT_EQ(r.status, 0) << command << "\n" << r.err;
    return r.out;
  }

  // perf's command on the unpacked bundle in dir_/`which`.
  std::string perf(const std::string& which, const std::string& verb_and_options) const {
    const std::string d = dir_ + "/" + which;
    return hidden("perf --buildid-dir " + quote(d + "/.debug") + " " + verb_and_options + " -i " +
                  quote(d + "/perf.data") + " 2>/dev/null | grep -v '^#' | grep -v '^$'");
  }

  // The same by Debian sid's perf (7.2 today), in its own root: none of this host's files in sight.
  std::string newer_perf(const std::string& which, const std::string& verb_and_options) const {
    const std::string d = "/b/" + which;
    RunResult r =
        in_sid_root(dir_, "HOME=/b/home perf --buildid-dir " + d + "/.debug " + verb_and_options +
                              " -i " + d + "/perf.data 2>/dev/null | grep -v '^#' | grep -v '^$'");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }

  std::string dir_;
  std::string env_;
  RunResult slim_;
  RunResult unpacked_slim_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// perf record -g of llvm-objdump-19, whose time is in Debian's 129 MB libLLVM: the slim bundle is
// a tenth of the whole one, and perf report, perf script's callchains and hotspot's perfparser
// name every sample as from whole files, the PLT's entries included.
TEST_F(SlimTest, LibLlvmIsNamedAsFromWholeFiles) {
  record("-g", "llvm-objdump-19 -d /usr/bin/perf");
  archive_both();
  EXPECT_NE(slim_.err.find("slim copies"), std::string::npos) << slim_.err;
  EXPECT_NE(slim_.err.find("perf annotate needs a bundle made with --with-code"), std::string::npos)
      << slim_.err;
  EXPECT_NE(slim_.err.find("no unwind tables: the recording has no user stack copies"),
            std::string::npos)
      << slim_.err;
  EXPECT_NE(unpacked_slim_.err.find("slim: slim copies hold no code: perf annotate needs a "
                                    "bundle made with --with-code"),
            std::string::npos)
      << unpacked_slim_.err;
  std::cout << "slim bundle " << fs::file_size(dir_ + "/slim.tar.zst") << " bytes, with code "
            << fs::file_size(dir_ + "/whole.tar.zst") << " (" << size_ratio() << ")\n";
  EXPECT_LE(size_ratio(), 0.10);
  // The slim libLLVM is a file of holes where the code was, unpacked and merged into a cache.
  RunResult merged = sh(env_ + pdfix() + " unpack -q --buildid-dir " + quote(dir_ + "/merged") +
                        " " + quote(dir_ + "/slim.tar.zst") + " " + quote(dir_ + "/m"));
  ASSERT_EQ(merged.status, 0) << merged.err;
  for (const std::string& cache : {dir_ + "/s/.debug", dir_ + "/merged"}) {
    RunResult blocks = sh("f=$(ls " + quote(cache + kLibLlvm) +
                          "/*/elf) && du -k --apparent-size \"$f\" | cut -f1 && du -k \"$f\" | "
                          "cut -f1");
    ASSERT_EQ(blocks.status, 0) << blocks.err;
    std::istringstream sizes(blocks.out);
    uint64_t apparent = 0;
    uint64_t on_disk = 0;
    sizes >> apparent >> on_disk;
    EXPECT_GT(apparent, 100000U) << cache << ": " << blocks.out;
    EXPECT_LT(on_disk * 4, apparent) << cache << ": " << blocks.out;
  }

  const std::string report = "report --stdio --sort dso,sym -g none";
  const std::string slim = perf("s", report);
  const std::string whole = perf("w", report);
  ASSERT_NE(whole.find("libLLVM.so.19.1"), std::string::npos) << whole;
  ASSERT_GT(count(whole, "llvm::"), 20U) << whole;
  ASSERT_GT(count(whole, "@plt"), 0U) << whole;
  EXPECT_EQ(slim, whole) << line_diff(slim, whole);
  const std::string newer = newer_perf("w", report);
  ASSERT_GT(count(newer, "llvm::"), 20U) << newer;
  ASSERT_GT(count(newer, "@plt"), 0U) << newer;
  EXPECT_EQ(newer_perf("s", report), newer);

  const std::string script = "script -F ip,sym,dso";
  const std::string slim_frames = perf("s", script);
  EXPECT_GT(count(slim_frames, "llvm::"), 1000U);
  const std::string whole_frames = perf("w", script);
  EXPECT_EQ(slim_frames, whole_frames) << line_diff(slim_frames, whole_frames);

  ASSERT_FALSE(hotspot_perfparser().empty());
  for (const char* which : {"s", "w"}) {
    const std::string d = dir_ + "/" + which;
    hidden(hotspot_perfparser() + " --input " + quote(d + "/perf.data") + " --debug " +
           quote(d + "/.debug") + " --output " + quote(d + ".parsed") + " 2>/dev/null");
  }
  const std::string names = sh("strings " + quote(dir_ + "/s.parsed") + " | grep -c llvm::").out;
  EXPECT_GT(std::stoi(names), 20) << names;
  EXPECT_TRUE(same_file(dir_ + "/s.parsed", dir_ + "/w.parsed"));
}

class SlimProgramTest : public SlimTest {
 protected:
  void SetUp() override {
    SlimTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(fs::exists("/usr/lib/debug/.build-id")) << "libc6-dbg is not installed";
    std::ofstream(dir_ + "/sort.c") << kSortProgram;
    RunResult r = sh("gcc -O1 -g -no-pie -fno-omit-frame-pointer -o " + quote(dir_ + "/sort") +
                     " " + quote(dir_ + "/sort.c"));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void record_and_archive(const std::string& record_options) {
    record(record_options, quote(dir_ + "/sort"));
    archive_both();
    // The program gone: perf finds it only in the bundle.
    fs::remove(dir_ + "/sort");
  }
};

// A non-PIE program and libc, named and placed by source line as from whole files: the program's
// lines from its own debug information, libc's from libc6-dbg's debug file.
TEST_F(SlimProgramTest, NonPieProgramAndLibcSourceLines) {
  record_and_archive("-g");
  const std::string script = "script -F ip,sym,symoff,dso,srcline";
  const std::string slim = perf("s", script);
  const std::string whole = perf("w", script);
  ASSERT_GT(count(whole, "sort.c:"), 10U) << whole.substr(0, 4000);
  ASSERT_GT(count(whole, "mix+0x"), 10U);
  // libc's own source files, from its debug file.
  ASSERT_GT(count(whole, "msort.c:") + count(whole, "memcmp") + count(whole, ".S:"), 10U);
  EXPECT_EQ(slim, whole) << line_diff(slim, whole);
  // The control: the program's copy made by `llvm-objcopy --only-keep-debug` (the same sections
  // kept, the file laid out anew) and perf places its samples on other lines.
  fs::copy(dir_ + "/w", dir_ + "/o", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  RunResult relaid = sh("f=$(ls " + quote(dir_ + "/o/.debug" + dir_ + "/sort") +
                        "/*/elf) && llvm-objcopy-19 --only-keep-debug --set-section-type "
                        ".dynstr=3 --set-section-type .dynsym=11 \"$f\" \"$f.new\" && "
                        "mv \"$f.new\" \"$f\"");
  ASSERT_EQ(relaid.status, 0) << relaid.err;
  EXPECT_NE(perf("o", script), whole);
  const std::string newer = newer_perf("w", script);
  ASSERT_GT(count(newer, "sort.c:"), 10U) << newer.substr(0, 4000);
  EXPECT_EQ(newer_perf("s", script), newer);
  EXPECT_EQ(perf("s", "report --stdio --sort srcline -g none"),
            perf("w", "report --stdio --sort srcline -g none"));
  EXPECT_EQ(perf("s", "report --stdio --sort dso,sym -g none"),
            perf("w", "report --stdio --sort dso,sym -g none"));

  // addr2line and llvm-symbolizer, with inline frames, at 300 addresses across libc's .text: the
  // slim debug file (location lists and macros left out) answers as the whole one.
  const auto libc_debug = [&](const std::string& which) {
    return sh("ls " + quote(dir_ + "/" + which + "/.debug/usr/lib/x86_64-linux-gnu/libc.so.6") +
              "/*/debug | tr -d '\\n'")
        .out;
  };
  std::string addresses;
  std::istringstream sections(sh("readelf -SW " + quote(libc_debug("w"))).out);
  for (std::string line; std::getline(sections, line);) {
    std::istringstream fields(line.substr(line.find(']') + 1));
    std::string name, type, address, offset, size;
    fields >> name >> type >> address >> offset >> size;
    if (name != ".text") continue;
    const uint64_t start = std::stoull(address, nullptr, 16);
    const uint64_t length = std::stoull(size, nullptr, 16);
    for (uint64_t i = 0; i < 300; ++i)
      addresses += " 0x" + llvm::utohexstr(start + i * length / 300);
  }
  ASSERT_GT(addresses.size(), 300U) << addresses;
  for (const char* tool : {"addr2line -f -i -e", "llvm-symbolizer-19 --inlines --obj"}) {
    const auto lines = [&](const std::string& which) {
      return sh(std::string(tool) + " " + quote(libc_debug(which)) + addresses).out;
    };
    const std::string from_whole = lines("w");
    EXPECT_GT(count(from_whole, ".c:"), 200U) << tool << "\n" << from_whole.substr(0, 2000);
    EXPECT_EQ(lines("s"), from_whole) << tool;
  }

  // Code is what annotate reads: there with --with-code, missing (not wrong) from a slim copy.
  const std::string annotate = "annotate --stdio -s mix";
  const std::string with_code = perf("w", annotate);
  EXPECT_NE(with_code.find("imul"), std::string::npos) << with_code;
  EXPECT_EQ(perf("s", annotate).find("imul"), std::string::npos);
}

// A DWARF-mode recording, archived without --unwind: the slim copies keep the unwind tables, and
// perf unwinds every sample's stack copy as from whole files. perf 6.1 only: on a machine loaded
// by CI, sid's perf 7.2 once gave the two bundles different callchains and once unwound into the
// comparator in 1 sample of hundreds (unloaded, neither happened): no proof either way.
TEST_F(SlimProgramTest, DwarfStacksUnwindAsFromWholeFiles) {
  record_and_archive("--call-graph dwarf,16384");
  EXPECT_EQ(slim_.err.find("no unwind tables"), std::string::npos) << slim_.err;
  const std::string script = "script -F ip,sym,dso";
  const std::string slim = perf("s", script);
  const std::string whole = perf("w", script);
  // Callchains through libc's qsort back into the program's comparator and main.
  ASSERT_GT(count(whole, "compare"), 10U) << whole.substr(0, 4000);
  ASSERT_GT(count(whole, "main"), 100U);
  EXPECT_EQ(slim, whole) << line_diff(slim, whole);
  EXPECT_EQ(perf("s", "report --stdio --sort dso,sym --call-graph=graph,0.5,caller"),
            perf("w", "report --stdio --sort dso,sym --call-graph=graph,0.5,caller"));
}

// store keeps whole files by default (a local cache is where annotate runs), slim ones with
// --slim, holes and all, which perf reports from as from the whole ones.
TEST_F(SlimProgramTest, StoreKeepsWholeFilesUnlessSlim) {
  record("-g", quote(dir_ + "/sort"));
  const std::string program = dir_ + "/sort";
  const std::string id = own_id(program);
  ASSERT_EQ(id.size(), 40U);
  RunResult whole = sh(env_ + "PERF_BUILDID_DIR=" + quote(dir_ + "/whole") + " " + pdfix() +
                       " store --json " + quote(dir_ + "/fixed.data"));
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(int_of(parse_object(whole.out), "slim"), 0) << whole.out;
  RunResult slim = sh(env_ + "PERF_BUILDID_DIR=" + quote(dir_ + "/slim") + " " + pdfix() +
                      " store --slim --json " + quote(dir_ + "/fixed.data"));
  ASSERT_EQ(slim.status, 0) << slim.err;
  EXPECT_GT(int_of(parse_object(slim.out), "slim"), 2) << slim.out;
  EXPECT_NE(slim.out.find("slim copies hold no code: perf annotate needs them stored without "
                          "--slim"),
            std::string::npos)
      << slim.out;
  const std::string in_whole = dir_ + "/whole" + program + "/" + id + "/elf";
  const std::string in_slim = dir_ + "/slim" + program + "/" + id + "/elf";
  EXPECT_TRUE(same_file(in_whole, program));
  EXPECT_FALSE(same_file(in_slim, program));
  EXPECT_EQ(fs::file_size(in_slim), fs::file_size(program));
  fs::remove(program);
  const std::string report = "report --stdio --sort dso,sym,srcline -g none -i " +
                             quote(dir_ + "/fixed.data") + " 2>/dev/null | grep -v '^#'";
  const std::string from_whole =
      hidden("perf --buildid-dir " + quote(dir_ + "/whole") + " " + report);
  ASSERT_GT(count(from_whole, "sort.c:"), 3U) << from_whole;
  EXPECT_EQ(hidden("perf --buildid-dir " + quote(dir_ + "/slim") + " " + report), from_whole);
}

// elfutils' debuginfod serving a slim bundle: it answers /debuginfo for the program (its debug
// information is in the slim copy) and for libc (the slim debug file), and /executable with the
// slim copy, whose code a client finds missing, not wrong.
TEST_F(SlimProgramTest, DebuginfodServesASlimBundle) {
  const std::string id = own_id(dir_ + "/sort");
  const std::string libc_id = own_id("/usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_EQ(id.size(), 40U);
  ASSERT_EQ(libc_id.size(), 40U);
  record_and_archive("-g");
  fs::create_directories(dir_ + "/bundles");
  fs::rename(dir_ + "/slim.tar.zst", dir_ + "/bundles/slim.tar.zst");
  Debuginfod server(dir_, "-Z .tar.zst=zstdcat " + quote(dir_ + "/bundles"));
  EXPECT_TRUE(server.serves("debuginfo", id, dir_ + "/debuginfo"));
  EXPECT_TRUE(server.serves("executable", id, dir_ + "/executable"));
  EXPECT_TRUE(server.serves("debuginfo", libc_id, dir_ + "/libc.debug"));
  server.stop();
  const std::string kept = sh("ls " + quote(dir_ + "/s/.debug" + dir_ + "/sort") + "/*/elf").out;
  ASSERT_FALSE(kept.empty());
  EXPECT_TRUE(same_file(dir_ + "/debuginfo", kept.substr(0, kept.find('\n'))));
  EXPECT_TRUE(same_file(dir_ + "/executable", kept.substr(0, kept.find('\n'))));
  const std::string sections = sh("readelf -SW " + quote(dir_ + "/executable")).out;
  EXPECT_NE(sections.find(".text             NOBITS"), std::string::npos) << sections;
  EXPECT_NE(sections.find(".debug_info       PROGBITS"), std::string::npos) << sections;
  const std::string libc_sections = sh("readelf -SW " + quote(dir_ + "/libc.debug")).out;
  EXPECT_NE(libc_sections.find(".debug_line"), std::string::npos) << libc_sections;
  EXPECT_NE(libc_sections.find(".debug_loclists   NOBITS"), std::string::npos) << libc_sections;
}

}  // namespace
}  // namespace pdfix::e2e
