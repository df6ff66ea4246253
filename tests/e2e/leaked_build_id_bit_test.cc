// Two perf sessions at once, one with build-ids in its maps (perf 7's default) and one without
// (this machine's perf 6.1): the kernel's MMAP_BUILD_ID bit, set in the record the sessions share
// and never cleared, lands on the second session's maps over their device and inode. pdfix reads
// them as what they hold, and proves them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"
namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// How many MMAP2 records of `filename` in the perf.data file `path` have misc's MMAP_BUILD_ID bit,
// read by a reader of the file format apart from pdfix's.
int maps_marked_with_build_ids(const std::string& path, const std::string& filename) {
  const std::string script = R"(
import struct, sys
d = open(sys.argv[1], 'rb').read()
off, size = struct.unpack_from('<QQ', d, 40)
at, n = off, 0
while at + 8 <= off + size:
    t, misc, sz = struct.unpack_from('<IHH', d, at)
    if sz == 0: break
    if t == 10 and misc & 0x4000 and d[at + 72:at + sz].split(b'\0')[0] == sys.argv[2].encode():
        n += 1
    at += sz
print(n)
)";
  RunResult r = sh("python3 -c " + quote(script) + " " + quote(path) + " " + quote(filename));
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? std::stoi(r.out) : -1;
}

TEST(LeakedBuildIdBit, AKernelsBuildIdBitOnAnotherSessionsMapsIsReadAsTheirDeviceAndInode) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string dir_ = temp_dir();
  build_app(dir_ + "/app", "1");
  // perf 7 records the machine with build-ids in its maps while this machine's perf records the
  // app without. The kernel sets MMAP_BUILD_ID in the record the sessions share and leaves it set
  // (perf_event_mmap_output): the second session's maps of the app say they carry a build-id and
  // hold its device and inode.
  const std::string perf7 = perf_sid_command();
  ASSERT_NE(perf7, "");
  const std::string app = dir_ + "/app/app";
  Background background(dir_);
  const std::string seven = background.start(
      perf7 + " record -a -o " + quote(dir_ + "/seven.data") + " -- sleep 60", "seven.log");
  RunResult r = sh("sleep 2");
  const std::string in = dir_ + "/in.data";
  r = sh("perf record -q -B -o " + quote(in) + " -- " + quote(app));
  ASSERT_EQ(r.status, 0) << r.err;
  sh("kill -INT " + seven + "; while kill -0 " + seven + " 2>/dev/null; do sleep 0.1; done");
  const int marked = maps_marked_with_build_ids(in, app);
  ASSERT_GT(marked, 0) << "the kernel marked none of this session's maps of the app: "
                       << sh("cat " + quote(dir_ + "/seven.log.err")).out;

  const std::string out = dir_ + "/out.data";
  r = sh(pdfix() + " fix --json " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  const llvm::json::Object report = parse_object(r.out);
  const llvm::json::Object* inject = report.getObject("inject");
  ASSERT_NE(inject, nullptr) << r.out;
  EXPECT_GE(int_of(*inject, "kernel_build_id_bits_cleared"), marked);
  // Read as device and inode, each map of the app is proven and carries the app's id.
  const std::string id = own_id(app);
  int maps = 0;
  for (const MapRecord& m : maps_of(out)) {
    if (m.filename != app) continue;
    EXPECT_EQ(m.build_id, id) << "pid " << m.pid;
    ++maps;
  }
  EXPECT_EQ(maps, marked);
  EXPECT_EQ(maps_marked_with_build_ids(out, app), marked);
  // And perf reads the app's symbols from it.
  r = sh("perf report --stdio --sort sym -i " + quote(out) + " 2>&1");
  EXPECT_NE(r.out.find("spin_v1"), std::string::npos) << r.out;
  fs::remove_all(dir_);
}

}  // namespace
}  // namespace pdfix::e2e
