// inject-jit over synthetic recordings: each jitdump and perf map found where its rules allow and
// nowhere else, made an ELF file in the cache that readelf reads the id of, and placed in the maps.
#include "passes/inject_jit.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "fixture/fake_host.h"
#include "fixture/jit_files.h"
#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "format/records.h"
#include "gtest/gtest.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::DumpWriter;
using testing::every_record;
using testing::kCodeA;
using testing::kCodeB;
using testing::PerfDataBuilder;
using testing::read_elf;
using testing::ReadElf;
using testing::readelf_id;

// The pass over a recording with a marker map of a dump written beside it.
class InjectJitTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kPid = 4242;
  static constexpr uint64_t kLate = 0xf000000000000000;  // after the fixture's trailer time

  void SetUp() override {
    dir_ = testing::write_temp({}, "x");
    // As the kernel names files: no empty components (TMPDIR may end in '/').
    dir_ = std::filesystem::path(dir_.substr(0, dir_.rfind('/'))).lexically_normal();
    cache_ = dir_ + "/cache";
    dump_ = dir_ + "/jit-4242.dump";
  }
  void write(const std::string& path, const Bytes& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  // The file at `path` as a map record names it.
  static resolve::Inode file_of(const std::string& path) {
    struct stat st{};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return {major(st.st_dev), minor(st.st_dev), st.st_ino};
  }
  // A recording of the fake host, its times CLOCK_MONOTONIC's when `mono`.
  static PerfDataBuilder builder(bool mono = true) {
    PerfDataBuilder b;
    b.string_feature(format::kFeatHostname, "recorder");
    b.attr({.size = 128, .ids = {}, .flags = mono ? 1ULL << 25 : 0, .clockid = mono ? 1 : 0});
    return b;
  }
  // The dump at `path` mapped as `file`, then an anonymous map of its code, sampled.
  Bytes recording(bool mono, const resolve::Inode& file, const std::string& path = "") {
    PerfDataBuilder b = builder(mono);
    b.mmap2(kPid, 0x7000000, 0x1000, 0, path.empty() ? dump_ : path, file.maj, file.min, file.ino)
        .mmap(kPid, 0x7000, 0x10000, 0x7000, "//anon")
        .sample(0x7002, kPid, kPid, kLate + 10);
    return b.build();
  }
  // A dump of one load, JS:a at 0x7000, and a recording that maps it (its marker) so far.
  PerfDataBuilder one_load_and_its_marker() {
    DumpWriter w(false);
    w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA);
    write(dump_, w.bytes());
    const resolve::Inode file = file_of(dump_);
    PerfDataBuilder b = builder();
    b.mmap2(kPid, 0x7000000, 0x1000, 0, dump_, file.maj, file.min, file.ino);
    return b;
  }
  // After one_load_and_its_marker(), an anonymous map of its code, another image (an exec, a new
  // process under the pid), and an anonymous map of that: the first is dropped, the second
  // stays, the dump describing none of the new image's code.
  void expect_second_image_keeps_its_anonymous_map(PerfDataBuilder& b) {
    const auto out = maps(run(b.build()));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(filenames_[0], dir_ + "/jitted-4242.so");
    EXPECT_EQ(filenames_[1], "//anon");
    EXPECT_EQ(out[1].start, 0x9000u);
    EXPECT_EQ(pass_report_.anonymous_dropped, 1u);
  }
  // `path` under dir_ (made) and its file with the dump of every record.
  std::string dump_under(const std::string& path) {
    std::filesystem::create_directories(std::filesystem::path(dir_ + path).parent_path());
    write(dir_ + path, every_record(false).bytes());
    return dir_ + path;
  }
  static int64_t seconds_from_now(int64_t s) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() +
           s * 1'000'000'000;
  }

  // Runs the pass; the records of the output.
  testing::ReadBack run(const Bytes& input, passes::InjectJitConfig config = {}) {
    if (config.buildid_dir.empty()) config.buildid_dir = cache_;
    const std::string in_path = testing::write_temp(input);
    auto in = io::open_input(in_path);
    EXPECT_TRUE(in.ok());
    common_.host = &host_;
    common_.resolver = passes::common_for(nullptr, "", {}, host_, {}).resolver;
    common_.survey = survey_ ? std::make_shared<passes::OnDemandSurvey>(*in) : nullptr;
    auto chain =
        transform::run_pipeline(*in, in_path + ".out",
                                [&] {
                                  transform::PassChain c;
                                  c.push_back(std::make_unique<passes::InjectJit>(config, common_));
                                  return c;
                                },
                                {});
    EXPECT_TRUE(chain.ok()) << chain.status();
    pass_report_ = dynamic_cast<const passes::InjectJit&>(*chain->front()).report();
    incomplete_ = dynamic_cast<const passes::InjectJit&>(*chain->front()).incomplete();
    auto back = testing::read_back(in_path + ".out");
    EXPECT_TRUE(back.ok()) << back.status();
    return *back;
  }
  std::vector<format::MmapRecord> maps(const testing::ReadBack& r) {
    std::vector<format::MmapRecord> out;
    for (size_t i = 0; i < r.types.size(); ++i) {
      if (r.types[i] != format::kMmap && r.types[i] != format::kMmap2) continue;
      auto m = format::decode_mmap(r.bytes[i], r.endian, r.trailers[i], 0);
      EXPECT_TRUE(m.ok());
      filenames_.emplace_back(m->filename);
      times_.push_back(r.endian.u64(r.bytes[i].data() + r.bytes[i].size() - r.trailers[i] + 8));
      out.push_back(*m);
    }
    return out;
  }

  testing::FakeHost host_;
  passes::Common common_;
  bool survey_ = false;  // the whole recording surveyed on demand, as fix does for a file
  std::string dir_, cache_, dump_;
  passes::JitReport pass_report_;
  bool incomplete_ = false;
  std::vector<std::string> filenames_;
  std::vector<uint64_t> times_;
};

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

// The perf map of process kPid, whose own pid is 7 in its namespace, under its root dir_.
class InjectPerfMapTest : public InjectJitTest {
 protected:
  void SetUp() override {
    InjectJitTest::SetUp();
    std::filesystem::create_directories(dir_ + "/tmp");
    map_file_ = dir_ + "/tmp/perf-7.map";
    const std::string text = "7010 20 JS:*fib\n";
    write(map_file_, Bytes(text.begin(), text.end()));
    common_.recording_started_at = seconds_from_now(-120);
    common_.recording_ended_at = seconds_from_now(60);
    host_.processes[kPid] = {.root = dir_, .started_at = seconds_from_now(-3600), .ns_pid = 7};
  }
  // The process gone, its program (/usr/bin/node) on an overlay mounted at dir_: its inode.
  resolve::Inode exited_on_overlay() {
    host_.processes.erase(kPid);
    std::filesystem::create_directories(dir_ + "/usr/bin");
    write(dir_ + "/usr/bin/node", Bytes(64, 1));
    const resolve::Inode node = file_of(dir_ + "/usr/bin/node");
    host_.mounts[{node.maj, node.min}] = {.type = "overlay", .point = dir_, .root = "/"};
    return node;
  }
  // Where the pass read the process's map file; "" when it read none.
  std::string found_at() {
    PerfDataBuilder b = builder(false);
    b.mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon");
    maps(run(b.build()));
    return pass_report_.sources.empty() ? "" : pass_report_.sources[0].found_at;
  }
  std::string map_file_;
};

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
