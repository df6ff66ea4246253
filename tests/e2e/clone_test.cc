// On a filesystem that shares blocks between files (XFS with reflink, made here on a loop image),
// pdfix clones the untouched runs of a recording instead of copying them. The output bytes are
// the same whichever path wrote them; the filesystem itself says which blocks are shared.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Extents of `path` that the filesystem reports as shared with another file.
int shared_extents(const std::string& path) {
  RunResult r = sh("filefrag -v " + quote(path) + " | grep -c shared || true");
  return std::stoi(r.out);
}

// The first byte of `path`'s last shared extent (filefrag counts in blocks of 4 KiB with -b4096),
// or 0 when none is shared.
uint64_t last_shared_from(const std::string& path) {
  RunResult r =
      sh("filefrag -b4096 -v " + quote(path) +
         " | awk '/shared/ { split($2, a, \"[.]\"); from = a[1] } END { print from + 0 }'");
  return std::stoull(r.out) * 4096;
}

class CloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    mnt_ = dir_ + "/xfs";
    fs::create_directory(mnt_);
    RunResult r = sh("truncate -s 1G " + dir_ + "/xfs.img && mkfs.xfs -q -m reflink=1 " + dir_ +
                     "/xfs.img && mount -o loop " + dir_ + "/xfs.img " + mnt_);
    if (r.status != 0) {
      mounted_ = false;
      if (perf_required()) FAIL() << "cannot mount an XFS loop image here: " << r.err;
      GTEST_SKIP() << "*** cannot mount an XFS loop image here (root, xfsprogs, loop devices): "
                   << r.err << " SKIPPED ***";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) sh("umount " + mnt_);
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A recording with large records (8 KiB of stack each) made on the XFS image; `args` adds -z.
  // Halfway, the shell runs /bin/true: its maps, which inject rewrites, stand between two long
  // runs, and the second starts at no particular offset within a block.
  std::string record(const std::string& name, const std::string& args, int loops = 300000) {
    const std::string path = mnt_ + "/" + name;
    const std::string loop =
        "i=0; while [ $i -lt " + std::to_string(loops / 2) + " ]; do i=$((i+1)); done";
    RunResult r = sh("perf record -q -B --call-graph dwarf,8192 -F 5000 " + args + " -o " + path +
                     " -- sh -c '" + loop + "; /bin/true; " + loop + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return path;
  }
  // `pdfix VERB IN OUT` on the XFS image and to the ordinary filesystem: the same bytes. The
  // number of shared extents of the XFS output.
  int run_both(const std::string& verb, const std::string& in, const std::string& name) {
    const std::string cloned = mnt_ + "/" + name;
    const std::string copied = dir_ + "/" + name;
    RunResult a = sh(pdfix() + " " + verb + " " + in + " " + cloned);
    RunResult b = sh(pdfix() + " " + verb + " " + in + " " + copied);
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(b.status, 0) << b.err;
    EXPECT_TRUE(same_file(cloned, copied)) << verb;
    EXPECT_EQ(shared_extents(copied), 0) << "the ordinary filesystem shares no blocks";
    return shared_extents(cloned);
  }
  std::string dir_, mnt_;
  bool mounted_ = false;
};

TEST_F(CloneTest, UntouchedRunsAreClonedAndTheBytesAreTheSame) {
  const std::string in = record("in.data", "");
  ASSERT_GT(fs::file_size(in), 4U << 20) << "too short to have long runs";
  // /bin/true's maps are past the first MiB, so a run after them is cloned from within a block.
  RunResult dump = sh(pdfix() + " dump " + in + " | grep 'MMAP2.*/true' | tail -1");
  ASSERT_EQ(dump.status, 0);
  const uint64_t true_maps = std::stoull(dump.out.substr(0, dump.out.find(' ')), nullptr, 16);
  ASSERT_GT(true_maps, 1U << 20) << dump.out;
  // inject grows the kernel map (MMAP to MMAP2) and every user map: the runs between them move,
  // and are cloned at their new place.
  EXPECT_GT(run_both("inject --buildids", in, "inject.data"), 0);
  // The run after /true's rewritten maps starts within a block: it is cloned from the next block
  // on, at its own place in the output (the bytes above say so), not written.
  EXPECT_GT(last_shared_from(mnt_ + "/inject.data"), true_maps);
  EXPECT_GT(run_both("fix", in, "fix.data"), 0);
  // Nothing changes: the whole file but its edges.
  EXPECT_GT(run_both("copy", in, "copy.data"), 0);
  EXPECT_TRUE(same_file(in, mnt_ + "/copy.data"));
  // A second fix changes nothing either, and shares the blocks of the first.
  EXPECT_GT(run_both("fix", mnt_ + "/fix.data", "again.data"), 0);
  EXPECT_TRUE(same_file(mnt_ + "/fix.data", mnt_ + "/again.data"));
}

TEST_F(CloneTest, CompressedDataIsClonedOnlyWhenKeptAsItWas) {
  // Stacks compress about 70:1: a longer run gives compressed data longer than one clone. How
  // many samples a loop gives depends on the machine's speed: it runs longer until there are.
  std::string in;
  for (int loops = 3000000; loops <= 24000000; loops *= 2) {
    in = record("z.data", "-z", loops);
    if (fs::file_size(in) > (1U << 20)) break;
  }
  ASSERT_NE(sh(pdfix() + " info " + in).out.find("COMPRESSED"), std::string::npos);
  ASSERT_GT(fs::file_size(in), 1U << 20);
  // copy keeps the compressed records as they were: cloned.
  EXPECT_GT(run_both("copy", in, "copy.data"), 0);
  // inject changes maps inside them: the data is compressed anew, so there is nothing to clone
  // in it; the bytes are still the same on both filesystems.
  run_both("inject --buildids", in, "inject.data");
}

TEST_F(CloneTest, AcrossFilesystemsTheRunsAreCopied) {
  // Input on the ordinary filesystem, output on XFS: FICLONERANGE refuses (EXDEV), and the
  // output is written as usual.
  const std::string in = record("in.data", "");
  const std::string elsewhere = dir_ + "/in.data";
  fs::copy_file(in, elsewhere);
  RunResult r = sh(pdfix() + " inject --buildids " + elsewhere + " " + mnt_ + "/out.data");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(sh(pdfix() + " inject --buildids " + in + " " + mnt_ + "/cloned.data").status, 0);
  EXPECT_TRUE(same_file(mnt_ + "/out.data", mnt_ + "/cloned.data"));
  EXPECT_EQ(shared_extents(mnt_ + "/out.data"), 0);
}

}  // namespace
}  // namespace pdfix::e2e
