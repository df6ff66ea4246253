// Which DSOs samples hit, when one path names two files: the host's libc.so.6 and a container's.
#include <gtest/gtest.h>

#include "fixture/perf_data_builder.h"
#include "format/records.h"
#include "inspect/buildid_list.h"
#include "io/input.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

constexpr char kLibc[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const Bytes kHostId(20, 0xaa);
const Bytes kContainerId(20, 0xcc);

// Process 1 (the host's) and process 2 (a container's) map a file at kLibc at the same address,
// and one sample falls in process 1's, two in process 2's. (No sample_id trailers: the maps come
// first in time as in the file.)
void two_files(PerfDataBuilder& b, const Bytes* host_id, const Bytes* container_id) {
  b.attr({.sample_id_all = false});
  if (host_id != nullptr) {
    b.mmap2_build_id(1, 0x10000, 0x1000, 0, kLibc, *host_id);
  } else {
    b.mmap2(1, 0x10000, 0x1000, 0, kLibc, 254, 0, 1001);
  }
  if (container_id != nullptr) {
    b.mmap2_build_id(2, 0x10000, 0x1000, 0, kLibc, *container_id);
  } else {
    b.mmap2(2, 0x10000, 0x1000, 0, kLibc, 0, 40, 2002);
  }
  b.sample(0x10010, 1, 1, 10).sample(0x10010, 2, 2, 11).sample(0x10020, 2, 2, 12);
}

// (build-id, samples) of every DSO of kLibc that samples hit.
std::vector<std::pair<std::string, uint64_t>> libc_hits(const Bytes& recording) {
  auto in = io::open_input(testing::write_temp(recording));
  EXPECT_TRUE(in.ok()) << in.status();
  auto listing =
      inspect::list_build_ids(*in, {.hits = true, .every_source = true, .count_samples = true});
  EXPECT_TRUE(listing.ok()) << listing.status();
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& d : listing->dsos) {
    if (d.name == kLibc) out.emplace_back(d.build_id, d.samples);
  }
  return out;
}

const std::string kHostHex(40, 'a');
const std::string kContainerHex(40, 'c');

TEST(DsoHits, TwoFilesAtOnePathAreTwoDsos) {
  PerfDataBuilder b;
  two_files(b, &kHostId, &kContainerId);
  EXPECT_EQ(libc_hits(b.build()),
            (std::vector<std::pair<std::string, uint64_t>>{{kHostHex, 1}, {kContainerHex, 2}}));
}

// perf's table names the host's file by path; the container's maps carry no id: the table's id
// is not theirs, and their samples count for a file without an id.
TEST(DsoHits, TheTablesIdIsNotGivenToAnotherFileOfItsPath) {
  PerfDataBuilder b;
  two_files(b, &kHostId, nullptr);
  b.build_id_entry(2, -1, kHostId, kLibc);
  EXPECT_EQ(libc_hits(b.build()),
            (std::vector<std::pair<std::string, uint64_t>>{{kHostHex, 1}, {"", 2}}));
  // Neither carries an id and the table has one: which file it is cannot be told, and the two
  // stay two files.
  PerfDataBuilder neither;
  two_files(neither, nullptr, nullptr);
  neither.build_id_entry(2, -1, kHostId, kLibc);
  EXPECT_EQ(libc_hits(neither.build()),
            (std::vector<std::pair<std::string, uint64_t>>{{"", 1}, {"", 2}}));
}

// Files without an id (Go programs) are told apart by the device and inode their maps name, and
// each lists the processes that map it: what archive proves and keeps them by.
TEST(DsoHits, FilesWithoutAnIdAreTheirInodesWithTheirProcesses) {
  PerfDataBuilder b;
  two_files(b, nullptr, nullptr);
  b.mmap2(3, 0x10000, 0x1000, 0, kLibc, 0, 40, 2002);  // a second process of the container's file
  b.sample(0x10030, 3, 3, 13);
  auto in = io::open_input(testing::write_temp(b.build()));
  ASSERT_TRUE(in.ok()) << in.status();
  auto listing = inspect::list_build_ids(*in, {.hits = true, .every_source = true});
  ASSERT_TRUE(listing.ok()) << listing.status();
  std::vector<std::tuple<uint32_t, uint32_t, uint64_t, std::vector<uint32_t>>> files;
  for (const auto& d : listing->dsos) {
    if (d.name == kLibc && d.has_inode) files.emplace_back(d.maj, d.min, d.ino, d.pids);
  }
  using Pids = std::vector<uint32_t>;
  EXPECT_EQ(files, (std::vector<std::tuple<uint32_t, uint32_t, uint64_t, Pids>>{
                       {254, 0, 1001, Pids{1}}, {0, 40, 2002, Pids{2, 3}}}));
}

// One file at the path, as in most recordings: the table's id is its.
TEST(DsoHits, TheTablesIdIsTheOnlyFilesOfItsPath) {
  PerfDataBuilder b;
  b.attr({.sample_id_all = false});
  b.mmap2(1, 0x10000, 0x1000, 0, kLibc, 254, 0, 1001);
  b.mmap2(2, 0x10000, 0x1000, 0, kLibc, 254, 0, 1001);
  b.sample(0x10010, 1, 1, 10).sample(0x10010, 2, 2, 11);
  b.build_id_entry(2, -1, kHostId, kLibc);
  EXPECT_EQ(libc_hits(b.build()), (std::vector<std::pair<std::string, uint64_t>>{{kHostHex, 2}}));
}

// A DSO that only a callchain passes through is hit: perf lists it in the build-id table, and its
// binary is kept.
TEST(DsoHits, ACallchainsFramesAreHitsThoughNoSampleIsInThem) {
  constexpr char kApp[] = "/usr/bin/app";
  constexpr char kLib[] = "/usr/lib/libcaller.so";
  PerfDataBuilder b;
  b.attr({.sample_type = 0x127, .sample_id_all = false});
  b.mmap2(1, 0x10000, 0x1000, 0, kApp, 254, 0, 1);
  b.mmap2(1, 0x20000, 0x1000, 0, kLib, 254, 0, 2);
  b.sample_callchain(0x10010, 1, 1, 10, {format::kContextUser, 0x10010, 0x20010});
  auto in = io::open_input(testing::write_temp(b.build()));
  ASSERT_TRUE(in.ok()) << in.status();
  auto listing = inspect::list_build_ids(*in, {.hits = true, .count_samples = true});
  ASSERT_TRUE(listing.ok()) << listing.status();
  std::vector<std::pair<std::string, uint64_t>> hit;
  for (const auto& d : listing->dsos) hit.emplace_back(d.name, d.samples);
  EXPECT_EQ(hit, (std::vector<std::pair<std::string, uint64_t>>{{kApp, 1}, {kLib, 0}}));
}

}  // namespace
}  // namespace pdfix
