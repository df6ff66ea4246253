// Binaries without a build-id: a Go 1.19 program (Debian's golang-go writes no GNU build-id and
// cannot be asked to) recorded beside a C program, fixed and archived, the program deleted, the
// bundle unpacked with a fresh HOME: the command `pdfix unpack` prints must name the Go function
// as perf does with the binary in place, and the kernel, the vdso and the C program as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Kernel samples whose symbol perf script names (-F ip,sym,dso: a line ending in
// ([kernel.kallsyms]) with a name before it, not "[unknown]").
size_t named_kernel_samples(const std::string& script) {
  size_t n = 0;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    if (line.ends_with("([kernel.kallsyms])") && line.find("[unknown]") == std::string::npos) ++n;
  }
  return n;
}

class GoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
    dir_ = temp_dir();
    fs::create_directories(dir_ + "/home");
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
    build_go_fib(dir_ + "/gofib", "1");
    ASSERT_EQ(own_id(dir_ + "/gofib"), "") << "Go wrote a GNU build-id: nothing to test";
    build_app(dir_ + "/app", "1");
    // A program whose time goes into the vdso: perf reads it from the root too, given --symfs.
    std::ofstream(dir_ + "/clock.c")
        << "#include <time.h>\nint main(void) { struct timespec t; long s = 0; for (long i = 0; "
           "i < 10000000; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; } return s "
           "== 1; }\n";
    RunResult r = sh("gcc -O1 -o " + quote(dir_ + "/clock") + " " + quote(dir_ + "/clock.c"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh(env_ + "perf record -q -B -o " + quote(dir_ + "/in.data") + " -- sh -c " +
           quote(quote(dir_ + "/gofib") + " 36 >/dev/null; " + quote(dir_ + "/app/app") + "; " +
                 quote(dir_ + "/clock")));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string script(const std::string& args) {
    RunResult r = sh(env_ + "perf script -F ip,sym,dso " + args + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }
  std::string dir_;
  std::string env_;
};

TEST_F(GoTest, AProgramWithoutABuildIdIsBundledByPathAndNamedFromTheBundle) {
  const std::string in = dir_ + "/in.data";
  const std::string fixed = dir_ + "/fixed.data";
  const std::string bundle = dir_ + "/b.tar.zst";
  RunResult fix = sh(env_ + pdfix() + " fix --strict --archive " + quote(bundle) + " " + quote(in) +
                     " " + quote(fixed));
  ASSERT_EQ(fix.status, 0) << fix.err;
  EXPECT_NE(fix.err.find("no GNU build-id in the file"), std::string::npos) << fix.err;
  EXPECT_NE(fix.err.find("1 without a build-id, kept by path"), std::string::npos) << fix.err;
  EXPECT_NE(fix.err.find("every binary that samples hit resolves"), std::string::npos) << fix.err;

  // With the binaries in place: what perf names.
  const std::string reference = script("-i " + quote(fixed));
  const size_t fib_here = count(reference, "main.fib_v1");
  const size_t spin_here = count(reference, "spin_v1");
  const size_t kernel_here = named_kernel_samples(reference);
  ASSERT_GT(fib_here, 100U) << reference.substr(0, 2000);
  ASSERT_GT(spin_here, 10U);

  // `store` keeps it in a cache under a root named by its content's hash.
  RunResult store =
      sh(env_ + pdfix() + " store --buildid-dir " + quote(dir_ + "/cache") + " " + quote(fixed));
  ASSERT_EQ(store.status, 0) << store.err;
  RunResult hash = sh("sha256sum " + quote(dir_ + "/gofib") + " | cut -c1-16");
  ASSERT_EQ(hash.status, 0);
  hash.out.pop_back();
  EXPECT_TRUE(same_file(dir_ + "/gofib", dir_ + "/cache/.symfs/" + hash.out + dir_ + "/gofib"))
      << store.err;

  // The program gone, the C program rebuilt in place (its path now names another file).
  fs::remove(dir_ + "/gofib");
  build_app(dir_ + "/app", "2");
  fs::create_directories(dir_ + "/fresh");
  env_ = "HOME=" + quote(dir_ + "/fresh") + " ";
  RunResult unpack = sh(env_ + pdfix() + " unpack " + quote(bundle) + " " + quote(dir_ + "/u"));
  ASSERT_EQ(unpack.status, 0) << unpack.err;
  EXPECT_NE(unpack.err.find("1 without a build-id"), std::string::npos) << unpack.err;
  std::istringstream lines(unpack.out);
  std::string report_command;
  std::string perfparser_command;
  std::getline(lines, report_command);
  std::getline(lines, perfparser_command);
  ASSERT_TRUE(report_command.starts_with("perf --buildid-dir ")) << unpack.out;
  EXPECT_NE(report_command.find(" --symfs "), std::string::npos) << report_command;
  EXPECT_NE(report_command.find(" --kallsyms "), std::string::npos) << report_command;
  ASSERT_TRUE(perfparser_command.starts_with("hotspot-perfparser ")) << unpack.out;

  // The printed command, run as perf script: the same options name the same samples.
  std::string as_script = report_command;
  as_script.replace(as_script.find(" report "), 8, " script -F ip,sym,dso ");
  RunResult unpacked = sh(env_ + as_script + " 2>/dev/null");
  ASSERT_EQ(unpacked.status, 0) << unpacked.err;
  EXPECT_GE(count(unpacked.out, "main.fib_v1") * 100, fib_here * 95)
      << count(unpacked.out, "main.fib_v1") << " of " << fib_here;
  EXPECT_GE(named_kernel_samples(unpacked.out) * 100, kernel_here * 95)
      << named_kernel_samples(unpacked.out) << " of " << kernel_here;
  EXPECT_GE(count(unpacked.out, "spin_v1") * 100, spin_here * 95);
  EXPECT_EQ(count(unpacked.out, "spin_v2"), 0U);
  // Without --symfs the program's samples are raw addresses: the layout is what names them.
  RunResult plain = sh(env_ + "perf --buildid-dir " + quote(dir_ + "/u/.debug") +
                       " script -F ip,sym,dso -i " + quote(dir_ + "/u/perf.data") + " 2>/dev/null");
  EXPECT_LT(count(plain.out, "main.fib_v1") * 10, fib_here);
  // The vdso perf names only from the bundle's cache (perf record -B kept no copy): with --symfs
  // as without it.
  const size_t vdso_here = count(plain.out, "__vdso_clock_gettime");
  ASSERT_GT(vdso_here, 100U);
  EXPECT_GE(count(unpacked.out, "__vdso_clock_gettime") * 100, vdso_here * 95)
      << count(unpacked.out, "__vdso_clock_gettime") << " of " << vdso_here;
  std::cout << "main.fib_v1 named on " << count(unpacked.out, "main.fib_v1") << " of " << fib_here
            << " samples, kernel symbols on " << named_kernel_samples(unpacked.out) << " of "
            << kernel_here << ", spin_v1 on " << count(unpacked.out, "spin_v1") << " of "
            << spin_here << ", the vdso's clock_gettime on "
            << count(unpacked.out, "__vdso_clock_gettime") << " of " << vdso_here << "\n";

  // hotspot's perfparser, with the printed options, names it too.
  ASSERT_FALSE(hotspot_perfparser().empty());
  std::string parser = perfparser_command;
  parser.replace(0, std::string("hotspot-perfparser").size(), hotspot_perfparser());
  RunResult parsed = sh(parser + " --output " + quote(dir_ + "/parsed.bin") + " 2>/dev/null");
  ASSERT_EQ(parsed.status, 0) << parsed.err;
  EXPECT_EQ(sh("grep -c main.fib_v1 " + quote(dir_ + "/parsed.bin")).status, 0);
}

// A program changed after the recording ended is not the one that ran: not bundled, named stale,
// and --strict says the archive is incomplete.
TEST_F(GoTest, AProgramModifiedAfterTheRecordingIsNotBundled) {
  const std::string in = dir_ + "/in.data";
  ASSERT_EQ(sh("touch -d '-1 minute' " + quote(in)).status, 0);
  ASSERT_EQ(sh("printf x >> " + quote(dir_ + "/gofib")).status, 0);
  RunResult fix = sh(env_ + pdfix() + " fix --strict --archive " + quote(dir_ + "/b.tar.zst") +
                     " " + quote(in) + " " + quote(dir_ + "/fixed.data"));
  EXPECT_EQ(fix.status, 3) << fix.err;
  EXPECT_NE(fix.err.find("stale (modified after the recording began)"), std::string::npos)
      << fix.err;
  RunResult listed = sh("tar --zstd -tf " + quote(dir_ + "/b.tar.zst"));
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_EQ(listed.out.find("symfs/"), std::string::npos) << listed.out;
}

}  // namespace
}  // namespace pdfix::e2e
