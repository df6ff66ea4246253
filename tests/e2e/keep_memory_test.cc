// What keeping a large binary costs in memory: a program of 120 MiB (a build with debug
// information, a Go or Java runtime) stored whole, stored slim and stored by follow, chunk after
// chunk, grows pdfix by a bounded amount, not by the binary's size. The file is read through its
// mapping and each part's pages are dropped once written (store/file_image.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Half of the bound every verb keeps to on hostile input (tests/CMakeLists.txt): 64 MiB in the
// plain build. Before pages were dropped, storing this program took 120 MiB and more.
constexpr uint64_t kBoundKib = uint64_t{PDFIX_MAX_RSS_MIB} * 1024 / 2;

class KeepMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir();
    // sha256sum with 120 MiB of data it never loads, as debug information is (a slim copy keeps
    // it too): still the program perf saw run, with its build-id, and busy long enough in its own
    // code for samples to hit it.
    RunResult r = sh("cd " + quote(dir_) +
                     " && head -c 125829120 /dev/urandom > pad && objcopy --add-section .pad=pad "
                     "--set-section-flags .pad=noload,readonly /usr/bin/sha256sum big && rm pad "
                     "&& head -c 30000000 /dev/zero > zeros");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override { remove_test_dir(dir_); }
  std::string dir_;
};

TEST_F(KeepMemoryTest, StoringA120MiBProgramStaysUnder64MiB) {
  PDFIX_NEEDS_PERF_RECORD();
  RunResult r = sh("cd " + quote(dir_) + " && perf record -q -B -o rec.data -- ./big zeros");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id =
      sh("readelf -n " + quote(dir_ + "/big") + " | sed -n 's/.*Build ID: //p'").out.substr(0, 40);
  ASSERT_EQ(id.size(), 40U);
  for (const std::string mode : {"--store", "--store --slim"}) {
    const std::string home = dir_ + "/home" + std::to_string(mode.size());
    fs::create_directories(home);
    const Bounded b = bounded("HOME=" + quote(home) + " " + pdfix() + " fix -q " + mode + " " +
                              quote(dir_ + "/rec.data") + " " + quote(home + "/out.data"));
    EXPECT_EQ(b.status, 0) << mode << "\n" << b.err;
    EXPECT_LT(b.max_rss_kib, kBoundKib) << mode;
    const std::string stored =
        home + "/.debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + "/elf";
    ASSERT_TRUE(fs::exists(stored)) << mode;
    // Whole, or slim: the slim copy keeps what is not loaded, as it keeps debug information.
    if (mode == "--store") {
      EXPECT_EQ(sh("cmp " + quote(dir_ + "/big") + " " + quote(stored)).status, 0);
    }
  }
  // Without a build-id (Go's default): proven by inode, hashed whole and kept by path, as the
  // samples hit it.
  r = sh("cd " + quote(dir_) +
         " && objcopy --remove-section .note.gnu.build-id big noid && perf record -q -B -o "
         "noid.data -- ./noid zeros");
  ASSERT_EQ(r.status, 0) << r.err;
  fs::create_directories(dir_ + "/home-noid");
  const Bounded noid =
      bounded("HOME=" + quote(dir_ + "/home-noid") + " " + pdfix() + " fix -q --store " +
              quote(dir_ + "/noid.data") + " " + quote(dir_ + "/home-noid/out.data"));
  EXPECT_LE(noid.status, 3) << noid.err;
  EXPECT_LT(noid.max_rss_kib, kBoundKib);
  EXPECT_EQ(sh("cmp " + quote(dir_ + "/noid") + " $(find " + quote(dir_ + "/home-noid/.debug") +
               " -path '*/.symfs/*' -name noid)")
                .status,
            0)
      << "not kept by path";
  // follow, the long-running run: the same per chunk.
  fs::create_directories(dir_ + "/raw");
  fs::create_directories(dir_ + "/out");
  for (const char* chunk : {"perf.data.2026112712000010", "perf.data.2026112712000011"}) {
    fs::copy_file(dir_ + "/rec.data", dir_ + "/raw/" + chunk);
  }
  const Bounded b = bounded("HOME=" + quote(dir_) + " " + pdfix() + " follow --once -q --store " +
                            quote(dir_ + "/raw") + " " + quote(dir_ + "/out"));
  EXPECT_EQ(b.status, 0) << b.err;
  EXPECT_LT(b.max_rss_kib, kBoundKib);
}

}  // namespace
}  // namespace pdfix::e2e
