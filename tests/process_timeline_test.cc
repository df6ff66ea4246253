// The process timeline's rules (transform/process_timeline.h), each on its own.
#include "transform/process_timeline.h"

#include <gtest/gtest.h>

#include "format/machine.h"
#include "format/record_type.h"

namespace pdfix::transform {
namespace {

constexpr uint16_t kUser = format::kCpuModeUser;
constexpr uint16_t kKernel = format::kCpuModeKernel;
constexpr uint16_t kGuestKernel = format::kCpuModeGuestKernel;
constexpr uint32_t kKernelPid = UINT32_MAX;

// The handle of the map covering `addr`, or -1 for none.
int64_t file_at(const ProcessTimeline& t, uint16_t mode, uint32_t pid, uint64_t addr) {
  const ProcessTimeline::Map* m = t.find(mode, pid, addr);
  return m == nullptr ? -1 : static_cast<int64_t>(m->file);
}

TEST(ProcessTimeline, ANewMapReplacesWhatItCoversAndKeepsTheSides) {
  ProcessTimeline t;
  t.map(kUser, 1, {.start = 0x1000, .end = 0x4000, .pgoff = 0x10000, .file = 7});
  t.map(kUser, 1, {.start = 0x2000, .end = 0x3000, .pgoff = 0, .file = 8});
  EXPECT_EQ(file_at(t, kUser, 1, 0x1fff), 7);
  EXPECT_EQ(file_at(t, kUser, 1, 0x2000), 8);
  EXPECT_EQ(file_at(t, kUser, 1, 0x3000), 7);
  // The right side keeps its place in the file.
  EXPECT_EQ(t.find(kUser, 1, 0x3000)->pgoff, 0x12000u);
  EXPECT_EQ(file_at(t, kUser, 1, 0x4000), -1);
}

TEST(ProcessTimeline, AForkCopiesTheParentsMapsAndAThreadSharesThem) {
  ProcessTimeline t;
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 7});
  t.fork(2, 1);
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 8});
  EXPECT_EQ(file_at(t, kUser, 2, 0x1000), 7);  // a copy: the parent's later map is its own
  t.fork(1, 1);                                // a new thread of process 1
  EXPECT_EQ(file_at(t, kUser, 1, 0x1000), 8);
  t.fork(2, 3);  // pid 2 reused by a child of a process the recording never mapped
  EXPECT_EQ(file_at(t, kUser, 2, 0x1000), -1);
}

// A fork shares the parent's maps until either maps something: a compile loop's children exec
// before they do. Thousands of them, each keeping what it was given, whatever the other does.
TEST(ProcessTimeline, ForkedMapsAreSharedUntilOneSideMapsAnew) {
  ProcessTimeline t;
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 7});
  for (uint32_t child = 2; child < 3000; ++child) t.fork(child, 1);
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 8});
  t.map(kUser, 2999, {.start = 0x1800, .end = 0x2000, .file = 9});
  t.exec(2998);
  for (uint32_t child = 2; child < 2998; ++child) ASSERT_EQ(file_at(t, kUser, child, 0x1000), 7);
  EXPECT_EQ(file_at(t, kUser, 1, 0x1000), 8);
  EXPECT_EQ(file_at(t, kUser, 2999, 0x1000), 7);
  EXPECT_EQ(file_at(t, kUser, 2999, 0x1800), 9);
  EXPECT_EQ(file_at(t, kUser, 2998, 0x1000), -1);
}

TEST(ProcessTimeline, AnExecClearsTheProcesssMaps) {
  ProcessTimeline t;
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 7});
  t.map(kUser, 1, {.start = 0x5000, .end = 0x6000, .file = 9});
  t.exec(1);
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 8});
  EXPECT_EQ(file_at(t, kUser, 1, 0x1000), 8);
  EXPECT_EQ(file_at(t, kUser, 1, 0x5000), -1);
}

// What a process runs, as inject-jit asks it of a map file's process: its lowest map (its parent's
// after a fork, none after an exec), and an image that changes at each exec and each new process.
TEST(ProcessTimeline, AProcesssLowestMapAndItsImage) {
  ProcessTimeline t;
  EXPECT_EQ(t.lowest(1), nullptr);
  EXPECT_EQ(t.image(1), 0u);
  t.map(kUser, 1, {.start = 0x5000, .end = 0x6000, .file = 9});
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 7});
  ASSERT_NE(t.lowest(1), nullptr);
  EXPECT_EQ(t.lowest(1)->file, 7u);
  t.fork(2, 1);
  ASSERT_NE(t.lowest(2), nullptr);
  EXPECT_EQ(t.lowest(2)->file, 7u);
  const uint64_t child = t.image(2);
  EXPECT_NE(child, 0u);
  t.fork(2, 2);  // a thread: the same process, the same image
  EXPECT_EQ(t.image(2), child);
  t.exec(2);
  EXPECT_EQ(t.lowest(2), nullptr);
  EXPECT_NE(t.image(2), child);
  EXPECT_EQ(t.lowest(1)->file, 7u);
}

TEST(ProcessTimeline, KernelMapsAreTheirMachinesAndAUserKernelAddressFindsThem) {
  ProcessTimeline t;
  const uint64_t text = 0xffffffff81000000;
  t.map(kKernel, kKernelPid, {.start = text, .end = text + 0x1000000, .file = 1}, text);
  t.map(kGuestKernel, 42, {.start = text, .end = text + 0x1000000, .file = 2}, text);
  EXPECT_EQ(file_at(t, kKernel, 5, text + 0x10), 1);
  EXPECT_EQ(file_at(t, kGuestKernel, 42, text + 0x10), 2);
  EXPECT_EQ(file_at(t, kGuestKernel, 43, text + 0x10), -1);
  // perf looks a user-mode address in the kernel's half up among the kernel's maps.
  EXPECT_EQ(file_at(t, kUser, 5, text + 0x10), 1);
  EXPECT_EQ(file_at(t, kUser, 5, 0x1000), -1);
  // A guest's user maps are not followed.
  t.map(format::kCpuModeGuestUser, 42, {.start = 0x1000, .end = 0x2000, .file = 3});
  EXPECT_EQ(file_at(t, kUser, 42, 0x1000), -1);
}

// A consumer keeps its answers for a process while its version stays: any change find() could
// show in it moves the version, and only those.
TEST(ProcessTimeline, AProcesssVersionMovesWithWhatFindCanSeeInIt) {
  ProcessTimeline t;
  t.map(kUser, 1, {.start = 0x1000, .end = 0x2000, .file = 7});
  t.map(kUser, 2, {.start = 0x1000, .end = 0x2000, .file = 7});
  const uint64_t one = t.version(1);
  const uint64_t two = t.version(2);
  EXPECT_NE(one, two);
  t.map(kUser, 2, {.start = 0x3000, .end = 0x4000, .file = 8});
  EXPECT_EQ(t.version(1), one);  // another process's map
  EXPECT_NE(t.version(2), two);
  t.fork(1, 1);  // a thread
  EXPECT_EQ(t.version(1), one);
  uint64_t before = t.version(1);
  t.map(kKernel, kKernelPid, {.start = 0xffff0000, .end = 0xffff1000, .file = 9});
  EXPECT_NE(t.version(1), before);  // a kernel's maps are every process's
  before = t.version(1);
  t.exec(1);
  EXPECT_NE(t.version(1), before);
  before = t.version(3);
  t.fork(3, 1);
  EXPECT_NE(t.version(3), before);
}

TEST(ProcessTimeline, AZeroLengthModuleRunsToTheNextMapAndAZeroLengthUserMapCoversNothing) {
  ProcessTimeline t;
  const uint64_t modules = 0xffffffffc0000000;
  t.map(kKernel, kKernelPid, {.start = modules + 0x10000, .end = modules + 0x12000, .file = 2});
  t.map(kKernel, kKernelPid, {.start = modules, .end = modules, .file = 1});
  EXPECT_EQ(file_at(t, kKernel, 0, modules + 0xffff), 1);
  EXPECT_EQ(file_at(t, kKernel, 0, modules + 0x10000), 2);
  t.map(kKernel, kKernelPid, {.start = modules + 0x20000, .end = modules + 0x20000, .file = 3});
  EXPECT_EQ(file_at(t, kKernel, 0, UINT64_MAX - 1), 3);
  t.map(kUser, 1, {.start = 0x1000, .end = 0x1000, .file = 4});
  EXPECT_EQ(file_at(t, kUser, 1, 0x1000), -1);
}

}  // namespace
}  // namespace pdfix::transform
