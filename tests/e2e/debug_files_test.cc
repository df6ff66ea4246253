// Debug files travel: a program spending its time in stripped glibc (qsort's msort_with_tmp, an
// AVX memmove: symbols only Debian's libc6-dbg has), recorded with -B so that perf caches nothing.
// fix --archive keeps each binary's debug file beside it; unpacked elsewhere, with the host's
// /usr/lib/debug hidden (a mount namespace with an empty tmpfs over it, as on a host without the
// -dbg package), perf names every sample as it does from its own build-id cache of the same files
// (perf buildid-cache -a, which keeps the debug file too). With --no-debug the bundle has none,
// and those samples stay raw addresses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr const char* kProgram = R"(#include <stdlib.h>
#include <string.h>
static int cmp(const void* a, const void* b) { return *(const int*)a - *(const int*)b; }
int main(void) {
  static int v[1 << 16];
  static char buf[1 << 20], dst[1 << 20];
  for (int k = 0; k < 40; k++) {
    for (int i = 0; i < (1 << 16); i++) v[i] = rand();
    qsort(v, 1 << 16, sizeof v[0], cmp);
    for (int j = 0; j < 40; j++) memmove(dst + (j & 7), buf, sizeof buf - 8);
  }
  return v[0] & 1;
}
)";

constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
constexpr const char* kLoader = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";

class DebugFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    std::ofstream(dir_ + "/p.c") << kProgram;
    ASSERT_EQ(sh("cd " + quote(dir_) + " && gcc -O2 -o p p.c").status, 0);
    const std::string id = own_id(kLibc);
    ASSERT_FALSE(id.empty());
    ASSERT_TRUE(
        fs::exists("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"))
        << "libc6-dbg is not installed (scripts/setup.sh installs it)";
    RunResult r = sh("cd " + quote(dir_) + " && perf record -q -B -o in.data ./p");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // `command` in a mount namespace where /usr/lib/debug is empty; HOME is a fresh directory.
  RunResult without_host_debug(const std::string& command) {
    fs::create_directories(dir_ + "/home");
    return sh("HOME=" + quote(dir_ + "/home") + " unshare -m sh -c " +
              quote("mount -t tmpfs none /usr/lib/debug && " + command));
  }
  // Each user-space sample's symbol and DSO as perf script prints them.
  std::vector<std::string> user_samples(const std::string& buildid_dir, const std::string& data) {
    RunResult r = without_host_debug("perf --buildid-dir " + quote(buildid_dir) +
                                     " script -F ip,sym,dso -G -i " + quote(data) + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::string> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("[kernel.kallsyms]") == std::string::npos) out.push_back(line);
    }
    return out;
  }
  static size_t count(const std::vector<std::string>& lines, const std::string& what) {
    size_t n = 0;
    for (const std::string& l : lines) n += l.find(what) != std::string::npos;
    return n;
  }
  std::string dir_;
};

TEST_F(DebugFilesTest, AnUnpackedBundleNamesWhatPerfsOwnCacheNames) {
  RunResult fix = sh("cd " + quote(dir_) + " && HOME=" + quote(dir_) + " " + pdfix() +
                     " fix --strict --archive b.tar.zst in.data out.data");
  ASSERT_EQ(fix.status, 0) << fix.err;
  EXPECT_NE(fix.err.find(" debug files in b.tar.zst"), std::string::npos) << fix.err;
  RunResult unpack = sh("cd " + quote(dir_) + " && HOME=" + quote(dir_ + "/home2") + " " + pdfix() +
                        " unpack b.tar.zst unpacked");
  ASSERT_EQ(unpack.status, 0) << unpack.err;
  const std::string id = own_id(kLibc);
  EXPECT_TRUE(fs::exists(dir_ + "/unpacked/.debug" + kLibc + "/" + id + "/debug"));
  // perf's own cache of the same files (those samples hit), made without the bundle.
  RunResult cached = sh("HOME=" + quote(dir_ + "/home") + " perf --buildid-dir " +
                        quote(dir_ + "/perfs") + " buildid-cache -a " +
                        quote(absl::StrCat(kLibc, ",", kLoader, ",", dir_, "/p")) + " 2>&1");
  ASSERT_EQ(cached.status, 0) << cached.out;
  const auto ours = user_samples(dir_ + "/unpacked/.debug", dir_ + "/unpacked/perf.data");
  const auto perfs = user_samples(dir_ + "/perfs", dir_ + "/in.data");
  ASSERT_GT(ours.size(), 200u);
  EXPECT_EQ(ours, perfs);
  // The symbols only the debug file has name most of the samples.
  const size_t named = count(ours, "msort_with_tmp") + count(ours, "__memmove_avx");
  std::cout << "  " << named << " of " << ours.size()
            << " user samples in symbols only libc's debug file has\n";
  EXPECT_GT(named * 2, ours.size());

  // --no-debug: no debug file in the bundle, and those samples are raw addresses.
  ASSERT_EQ(sh("cd " + quote(dir_) + " && HOME=" + quote(dir_) + " " + pdfix() +
               " archive -q --no-debug out.data lean.tar.zst")
                .status,
            0);
  RunResult listing = sh("tar --zstd -tf " + quote(dir_ + "/lean.tar.zst"));
  ASSERT_EQ(listing.status, 0) << listing.err;
  EXPECT_EQ(listing.out.find("/debug\n"), std::string::npos) << listing.out;
  EXPECT_NE(listing.out.find("/elf\n"), std::string::npos) << listing.out;
  ASSERT_EQ(sh("cd " + quote(dir_) + " && HOME=" + quote(dir_ + "/home3") + " " + pdfix() +
               " unpack lean.tar.zst lean")
                .status,
            0);
  const auto lean = user_samples(dir_ + "/lean/.debug", dir_ + "/lean/perf.data");
  EXPECT_EQ(count(lean, "msort_with_tmp"), 0u);
  // store keeps it in the cache it fills, where perf looks.
  ASSERT_EQ(sh("cd " + quote(dir_) + " && PERF_BUILDID_DIR=" + quote(dir_ + "/stored") + " " +
               pdfix() + " store -q out.data")
                .status,
            0);
  EXPECT_TRUE(fs::exists(dir_ + "/stored" + kLibc + "/" + id + "/debug"));
  std::cout << "  bundle " << fs::file_size(dir_ + "/b.tar.zst") << " bytes, "
            << fs::file_size(dir_ + "/lean.tar.zst") << " with --no-debug\n";
}

}  // namespace
}  // namespace pdfix::e2e
