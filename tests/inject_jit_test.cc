// inject-jit over synthetic recordings: each jitdump found where its rules allow and nowhere
// else, made an ELF file in the cache that readelf reads the id of, and placed in the maps.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fixture/inject_jit_fixture.h"
#include "format/record_type.h"
#include "gtest/gtest.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::DumpWriter;
using testing::every_record;
using testing::InjectJitTest;
using testing::kCodeA;
using testing::kCodeB;
using testing::PerfDataBuilder;
using testing::read_elf;
using testing::ReadElf;
using testing::readelf_id;

TEST_F(InjectJitTest, EveryLoadAndMoveBecomesAMapOfOneFileAtItsTime) {
  DumpWriter w(false);
  w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA)
      .load(kLate + 2, 0x7100, 2, "JS:b", kCodeB)
      .move(kLate + 3, 0x7100, 0x7200, kCodeB.size(), 2);
  write(dump_, w.bytes());
  const auto out = maps(run(recording(true, file_of(dump_))));
  // The marker and the anonymous map are gone; three maps of the dump's ELF file are there.
  ASSERT_EQ(out.size(), 3u) << (pass_report_.sources.empty() ? ""
                                                             : pass_report_.sources[0].problem);
  EXPECT_FALSE(incomplete_);
  const std::string id = pass_report_.sources.at(0).build_id;
  ASSERT_FALSE(id.empty());
  // The file in the cache, read by readelf (its id) and LLVM (where each load's code is).
  const std::string elf = cache_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + "/elf";
  EXPECT_EQ(readelf_id(elf), id);
  const ReadElf written = read_elf(testing::read_file(elf));
  ASSERT_TRUE(written.symbols.contains("JS:a") && written.symbols.contains("JS:b"));
  const uint64_t starts[] = {0x7000, 0x7100, 0x7200};
  const uint64_t pgoffs[] = {written.symbols.at("JS:a").first, written.symbols.at("JS:b").first,
                             written.symbols.at("JS:b").first};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(filenames_[i], dir_ + "/jitted-4242.so");
    EXPECT_EQ(out[i].start, starts[i]);
    EXPECT_EQ(out[i].pgoff, pgoffs[i]);
    EXPECT_EQ(out[i].pid, kPid);
    EXPECT_TRUE(out[i].has_build_id());
    EXPECT_EQ(format::BuildId::from_bytes({out[i].build_id.data(), out[i].build_id_size})->hex(),
              id);
    EXPECT_EQ(times_[i], kLate + 1 + i);
  }
  EXPECT_EQ(out[0].len, kCodeA.size());
  EXPECT_EQ(pass_report_.anonymous_dropped, 1u);
}

// perf delivers, at each FINISHED_ROUND, what is up to the highest time of the round before: each
// code map is written where the recording's time first reaches its own, not at the marker ahead
// of it (records of later rounds then come out of order) nor after it.
TEST_F(InjectJitTest, EachCodeMapIsWrittenWhereTheRecordingsTimeReachesIt) {
  DumpWriter w(false);
  w.load(kLate + 15, 0x7000, 1, "JS:a", kCodeA)
      .load(kLate + 25, 0x7100, 2, "JS:b", kCodeB)
      .load(kLate + 40, 0x7200, 3, "JS:c", kCodeA);
  write(dump_, w.bytes());
  const resolve::Inode file = file_of(dump_);
  PerfDataBuilder b = builder();
  b.mmap2(kPid, 0x7000000, 0x1000, 0, dump_, file.maj, file.min, file.ino)
      .sample(0x7002, kPid, kPid, kLate + 10)
      .finished_round()
      .sample(0x7002, kPid, kPid, kLate + 20)
      .sample(0x7102, kPid, kPid, kLate + 25)
      .finished_round()
      .sample(0x7102, kPid, kPid, kLate + 30);
  const testing::ReadBack back = run(b.build());
  std::vector<std::string> order;
  for (size_t i = 0; i < back.types.size(); ++i) {
    const auto& r = back.bytes[i];
    if (back.types[i] == format::kSample) {
      order.push_back("sample " + std::to_string(back.endian.u64(r.data() + 24) - kLate));
    } else if (back.types[i] == format::kMmap2) {
      order.push_back(
          "map " +
          std::to_string(back.endian.u64(r.data() + r.size() - back.trailers[i] + 8) - kLate));
    } else if (back.types[i] == format::kFinishedRound) {
      order.push_back("round");
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"sample 10", "round", "map 15", "sample 20", "map 25",
                                             "sample 25", "round", "sample 30", "map 40"}));
}

// After an exec the process is another program: the dump describes none of its anonymous code,
// which stays.
TEST_F(InjectJitTest, AnExecEndsWhatTheDumpSaysOfItsProcess) {
  PerfDataBuilder b = one_load_and_its_marker();
  b.mmap(kPid, 0x7000, 0x10000, 0x7000, "//anon")
      .comm(kPid, kPid, "other", /*exec=*/true)
      .mmap(kPid, 0x9000, 0x10000, 0x9000, "//anon");
  expect_second_image_keeps_its_anonymous_map(b);
}

// A pid reused by a new process (its FORK) is another program too.
TEST_F(InjectJitTest, ANewProcessUnderTheSamePidKeepsItsAnonymousCode) {
  PerfDataBuilder b = one_load_and_its_marker();
  Bytes fork;
  for (uint32_t v : {kPid, 1u, kPid, 1u, 0u, 0u}) {  // pid, ppid, tid, ptid, time (u64)
    for (int i = 0; i < 4; ++i) fork.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  b.mmap(kPid, 0x7000, 0x10000, 0x7000, "//anon")
      .raw_record(format::kFork, 0, fork)
      .mmap(kPid, 0x9000, 0x10000, 0x9000, "//anon");
  expect_second_image_keeps_its_anonymous_map(b);
}

TEST_F(InjectJitTest, ADumpMappedAgainAddsNoMoreMaps) {
  PerfDataBuilder b = one_load_and_its_marker();
  const resolve::Inode file = file_of(dump_);
  b.mmap2(kPid, 0x7100000, 0x1000, 0, dump_, file.maj, file.min, file.ino);
  const auto out = maps(run(b.build()));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(filenames_[0], dir_ + "/jitted-4242.so");
  EXPECT_EQ(pass_report_.sources.size(), 1u);
}

TEST_F(InjectJitTest, WithoutMonotonicTimesTheMarkerStaysAndTheRunIsIncomplete) {
  write(dump_, every_record(false).bytes());
  const auto out = maps(run(recording(false, file_of(dump_))));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(filenames_[0], dump_);
  EXPECT_EQ(filenames_[1], "//anon");
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("-k mono"), std::string::npos);
}

TEST_F(InjectJitTest, AnotherFileAtTheDumpsPathIsNotTakenACopyInJitDirIs) {
  write(dump_, every_record(false).bytes());
  resolve::Inode recorded = file_of(dump_);
  recorded.ino += 1;  // the mapped inode was another
  const auto left = maps(run(recording(true, recorded)));
  EXPECT_EQ(left.size(), 2u);
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("not the inode mapped"), std::string::npos)
      << pass_report_.sources.at(0).problem;
  // The same bytes copied off the host, as --jit-dir gives them.
  const std::string copies = dir_ + "/copies";
  ASSERT_EQ(mkdir(copies.c_str(), 0700), 0);
  DumpWriter w(false);
  w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA);
  write(copies + "/jit-4242.dump", w.bytes());
  filenames_.clear();
  // Each --jit-dir is looked in: the copy is in the second.
  const auto found =
      maps(run(recording(true, recorded), {.jit_dirs = {dir_ + "/nothing-here", copies}}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, copies + "/jit-4242.dump");
}

TEST_F(InjectJitTest, APerfMapRenamesTheAnonymousMapsItsSymbolsFallIn) {
  const std::string copies = dir_ + "/maps";
  ASSERT_EQ(mkdir(copies.c_str(), 0700), 0);
  const std::string text = "7010 20 JS:*fib\n7100 8 Stub\n";
  write(copies + "/perf-4242.map", Bytes(text.begin(), text.end()));
  PerfDataBuilder b = builder(false);
  b.mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon")
      .mmap(kPid, 0x90000, 0x1000, 0x90000, "//anon")     // no symbol in it
      .mmap(kPid + 1, 0x7000, 0x1000, 0x7000, "//anon");  // another process
  const auto out = maps(run(b.build(), {.jit_dirs = {copies}}));
  ASSERT_EQ(out.size(), 3u);
  ASSERT_EQ(pass_report_.sources.size(), 1u);
  const std::string id = pass_report_.sources[0].build_id;
  const std::string elf = cache_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + "/elf";
  EXPECT_EQ(readelf_id(elf), id);
  EXPECT_EQ(filenames_[0], "/tmp/jitted-4242-perf-map.so");
  // The map at 0x7000 is placed so that fib, at 0x7010, is where the file's symbol says.
  const ReadElf written = read_elf(testing::read_file(elf));
  ASSERT_TRUE(written.symbols.contains("JS:*fib"));
  EXPECT_EQ(out[0].pgoff + 0x10, written.symbols.at("JS:*fib").first);
  EXPECT_EQ(format::BuildId::from_bytes({out[0].build_id.data(), out[0].build_id_size})->hex(), id);
  EXPECT_EQ(filenames_[1], "//anon");
  EXPECT_EQ(filenames_[2], "//anon");
  EXPECT_EQ(pass_report_.sources[0].maps, 1u);
}

TEST_F(InjectJitTest, TheSameInodeNumberOnAnotherDeviceIsNotTheDump) {
  write(dump_, every_record(false).bytes());
  resolve::Inode recorded = file_of(dump_);
  recorded.min += 1;
  const auto out = maps(run(recording(true, recorded)));
  EXPECT_EQ(out.size(), 2u);  // the marker and the anonymous map, as they were
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("not the inode mapped"), std::string::npos)
      << pass_report_.sources.at(0).problem;
}

TEST_F(InjectJitTest, OffTheRecordingsHostNoFileHereIsTheDump) {
  write(dump_, every_record(false).bytes());
  host_.name = "another-host";
  const auto out = maps(run(recording(true, file_of(dump_))));
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, "");
}

TEST_F(InjectJitTest, ADumpIsReadUnderTheRecordedProcessesRootNotAReusedPids) {
  const std::string inside = "/in-container/jit-4242.dump";
  const std::string file = dump_under(inside);
  common_.recording_ended_at = seconds_from_now(-60);
  host_.processes[kPid] = {.root = dir_, .started_at = seconds_from_now(-3600), .ns_pid = kPid};
  maps(run(recording(true, file_of(file), inside)));
  EXPECT_FALSE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, file);
  // Started after the recording ended: another process under the pid.
  host_.processes[kPid].started_at = seconds_from_now(-1);
  maps(run(recording(true, file_of(file), inside)));
  EXPECT_TRUE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, "");
}

TEST_F(InjectJitTest, AnExitedProcesssDumpIsReadOnItsMountedOverlay) {
  const std::string inside = "/overlay-tmp/jit-4242.dump";
  const std::string file = dump_under(inside);
  const resolve::Inode mapped = file_of(file);
  // The overlay the map's device names is mounted at dir_; the process is gone.
  host_.mounts[{mapped.maj, mapped.min}] = {.type = "overlay", .point = dir_, .root = "/"};
  maps(run(recording(true, mapped, inside)));
  EXPECT_FALSE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, file);
}

TEST_F(InjectJitTest, ACopyIsTakenOnlyIfItIsTheNamedProcesssLoadedAfterItsMap) {
  resolve::Inode gone = file_of(dir_);
  gone.ino += 1;  // no file here is the one mapped
  const std::string copies = dir_ + "/copies";
  ASSERT_EQ(mkdir(copies.c_str(), 0700), 0);
  const std::string copy = copies + "/jit-4242.dump";
  write(copy, DumpWriter(false, 99).load(kLate + 1, 0x7000, 1, "JS:a", kCodeA).bytes());
  maps(run(recording(true, gone), {.jit_dirs = {copies}}));
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("is process 99's dump"), std::string::npos)
      << pass_report_.sources.at(0).problem;
  // The marker was mapped at the fixture's trailer time, 0xafaeadacabaaa9a8: code loaded before
  // it is an earlier process's of that pid.
  write(copy, DumpWriter(false, kPid)
                  .load(5000, 0x7000, 1, "JS:old", kCodeA)
                  .load(kLate + 1, 0x7000, 1, "JS:a", kCodeA)
                  .bytes());
  maps(run(recording(true, gone), {.jit_dirs = {copies}}));
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("another run's"), std::string::npos)
      << pass_report_.sources.at(0).problem;
  // The header's time is not the dump's age: the runtimes write it after the map, and V8 in
  // wall-clock microseconds (here: later than every record).
  write(copy,
        DumpWriter(false, kPid, ~uint64_t{0}).load(kLate + 1, 0x7000, 1, "JS:a", kCodeA).bytes());
  maps(run(recording(true, gone), {.jit_dirs = {copies}}));
  EXPECT_FALSE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, copy);
}

// perf applies an anonymous code map after the marker when its time is later, wherever it is in
// the file (records come per CPU): the dump's maps stand for its code then.
TEST_F(InjectJitTest, AnAnonymousMapFirstInTheFileButNotInTimeIsDroppedWithTheSurvey) {
  write(dump_, every_record(false).bytes());
  const resolve::Inode file = file_of(dump_);
  PerfDataBuilder b = builder();
  b.mmap(kPid, 0x7000, 0x10000, 0x7000, "//anon")
      .mmap2(kPid, 0x7000000, 0x1000, 0, dump_, file.maj, file.min, file.ino);
  const Bytes input = b.build();
  maps(run(input));
  EXPECT_EQ(std::count(filenames_.begin(), filenames_.end(), "//anon"), 1);
  filenames_.clear();
  survey_ = true;
  maps(run(input));
  EXPECT_EQ(std::count(filenames_.begin(), filenames_.end(), "//anon"), 0);
  EXPECT_EQ(pass_report_.anonymous_dropped, 1u);
  EXPECT_FALSE(incomplete_);
}

}  // namespace
}  // namespace pdfix
