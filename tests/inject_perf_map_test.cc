// inject-jit's perf-PID.map files over synthetic recordings: each read where its rules allow
// (the living process's root, its container's overlay, by the pid it has there) and nowhere else.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "fixture/inject_jit_fixture.h"
#include "format/record_type.h"
#include "gtest/gtest.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::InjectPerfMapTest;
using testing::PerfDataBuilder;

TEST_F(InjectPerfMapTest, IsReadUnderTheLivingProcessesRootByItsNamespacePid) {
  EXPECT_EQ(found_at(), map_file_);
}

TEST_F(InjectPerfMapTest, OffTheRecordingsHostNoMapFileHereIsRead) {
  host_.name = "another-host";
  EXPECT_EQ(found_at(), "");
}

TEST_F(InjectPerfMapTest, AReusedPidsMapFileIsNotRead) {
  host_.processes[kPid].started_at = seconds_from_now(3600);
  EXPECT_EQ(found_at(), "");
}

TEST_F(InjectPerfMapTest, OneLastWrittenBeforeTheRecordingBeganIsAnEarlierProcesses) {
  common_.recording_started_at = seconds_from_now(600);
  EXPECT_EQ(found_at(), "");
  // The report says where the pass looked and why the file there was passed over.
  ASSERT_EQ(pass_report_.map_files_not_found.size(), 1u);
  EXPECT_EQ(pass_report_.map_files_not_found[0].pid, kPid);
  EXPECT_NE(std::find(pass_report_.map_files_not_found[0].looked_at.begin(),
                      pass_report_.map_files_not_found[0].looked_at.end(),
                      map_file_ + " (last written before the recording began)"),
            pass_report_.map_files_not_found[0].looked_at.end());
}

// A process that exited, in a container whose overlay is still mounted: its map file is read in
// the overlay's /tmp, found through the overlay its files are on. It is named by the host's pid
// (a container of the host's pid namespace); the pid of its own namespace (7) nothing tells once
// the process is gone, and no other file is taken for it.
TEST_F(InjectPerfMapTest, AnExitedProcesssIsReadOnTheOverlayItsFilesAreOn) {
  const resolve::Inode node = exited_on_overlay();
  survey_ = true;
  PerfDataBuilder b = builder(false);
  b.mmap2(kPid, 0x400000, 0x1000, 0, "/usr/bin/node", node.maj, node.min, node.ino)
      .mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon");
  const Bytes input = b.build();
  maps(run(input));
  EXPECT_TRUE(pass_report_.sources.empty());
  const std::string by_host_pid = dir_ + "/tmp/perf-" + std::to_string(kPid) + ".map";
  ASSERT_EQ(pass_report_.map_files_not_found.size(), 1u);
  const std::vector<std::string>& looked_at = pass_report_.map_files_not_found[0].looked_at;
  EXPECT_NE(std::find(looked_at.begin(), looked_at.end(), by_host_pid), looked_at.end());
  std::filesystem::rename(map_file_, by_host_pid);
  maps(run(input));
  ASSERT_EQ(pass_report_.sources.size(), 1u);
  EXPECT_EQ(pass_report_.sources[0].found_at, by_host_pid);
  EXPECT_EQ(std::count(filenames_.begin(), filenames_.end(),
                       "/tmp/jitted-" + std::to_string(kPid) + "-perf-map.so"),
            1);
  // A process's code that comes before its files in the file (perf lists a running process's
  // maps by address): only the survey says which overlay its files are on.
  PerfDataBuilder code_first = builder(false);
  code_first.mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon")
      .mmap2(kPid, 0x400000, 0x1000, 0, "/usr/bin/node", node.maj, node.min, node.ino);
  maps(run(code_first.build()));
  ASSERT_EQ(pass_report_.sources.size(), 1u);
  EXPECT_EQ(pass_report_.sources[0].found_at, by_host_pid);
  survey_ = false;
  maps(run(code_first.build()));
  EXPECT_TRUE(pass_report_.sources.empty());
}

// perf writes a round CPU by CPU: a container's process may exec and map its files on one CPU
// before its fork, on another, comes in the file. Applied in file order, the fork gives it its
// parent's files (runc's, on the host's disk), which lead to no overlay; the survey's word for
// the process's own files does. Where neither does, the report says what its files are on.
TEST_F(InjectPerfMapTest, AForkAfterTheExecInTheFileLeavesTheProcesssOverlayFound) {
  const resolve::Inode node = exited_on_overlay();
  const std::string by_host_pid = dir_ + "/tmp/perf-" + std::to_string(kPid) + ".map";
  std::filesystem::rename(map_file_, by_host_pid);
  const auto fork = [](uint32_t pid, uint32_t ppid) {
    Bytes body(32, 0);
    for (const auto& [at, v] : {std::pair{0, pid}, {4, ppid}, {8, pid}, {12, ppid}}) {
      std::memcpy(body.data() + at, &v, sizeof v);
    }
    return body;
  };
  constexpr uint32_t kRunc = 900;
  const auto recording = [&](const resolve::Inode& own) {
    PerfDataBuilder b = builder(false);
    b.mmap2(kRunc, 0x500000, 0x1000, 0, "/usr/sbin/runc", 254, 99, 12345)
        .comm(kPid, kPid, "node", true)
        .mmap2(kPid, 0x400000, 0x1000, 0, "/usr/bin/node", own.maj, own.min, own.ino)
        .raw_record(format::kFork, 0, fork(kPid, kRunc))
        .mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon");
    return b.build();
  };
  survey_ = true;
  maps(run(recording(node)));
  ASSERT_EQ(pass_report_.sources.size(), 1u);
  EXPECT_EQ(pass_report_.sources[0].found_at, by_host_pid);

  // Its own files on another disk too: looked for on the host alone, and said why.
  maps(run(recording({254, 98, 777})));
  EXPECT_TRUE(pass_report_.sources.empty());
  ASSERT_EQ(pass_report_.map_files_not_found.size(), 1u);
  EXPECT_EQ(pass_report_.map_files_not_found[0].files_on,
            "254:99 inode 12345, on no overlay mounted here");
  EXPECT_EQ(pass_report_.map_files_not_found[0].looked_at,
            std::vector<std::string>{"/tmp/perf-" + std::to_string(kPid) + ".map"});
}

// A recording of this host's previous boot: an overlay mounted in this boot has the device
// number the recording's overlay had (anonymous devices are numbered anew each boot), and a
// process of this boot with the recorded pid wrote its map file there. The hostname is the same;
// the boot is not (the resolver's rule), and nothing here is read. The same files, the recording
// made in this boot, are read: the test tells the two apart.
TEST_F(InjectPerfMapTest, OfThisHostsPreviousBootNoMapFileOfAReusedPidIsRead) {
  const resolve::Inode node = exited_on_overlay();
  std::filesystem::rename(map_file_, dir_ + "/tmp/perf-" + std::to_string(kPid) + ".map");
  survey_ = true;
  PerfDataBuilder b = builder(false);
  b.mmap2(kPid, 0x400000, 0x1000, 0, "/usr/bin/node", node.maj, node.min, node.ino)
      .mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon");
  const Bytes input = b.build();
  common_.recording_started_at = seconds_from_now(-120);
  common_.recording_ended_at = seconds_from_now(-100);
  host_.booted_at = seconds_from_now(-30);
  maps(run(input));
  EXPECT_TRUE(pass_report_.sources.empty());
  host_.booted_at = seconds_from_now(-3600);
  maps(run(input));
  EXPECT_EQ(pass_report_.sources.size(), 1u);
}

}  // namespace
}  // namespace pdfix
