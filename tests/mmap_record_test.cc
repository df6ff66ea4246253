// MMAP2 records as the kernel writes them when two sessions record at once: the MMAP_BUILD_ID
// bit one session asked for left on the other's dev/ino.
#include <gtest/gtest.h>

#include <vector>

#include "fixture/perf_data_builder.h"
#include "format/byte_order.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

TEST(Records, AnMmap2MarkedWithABuildIdThatHoldsDevAndInodeIsReadAsDevAndInode) {
  // The kernel leaves MMAP_BUILD_ID set in the record it shares among sessions: a session without
  // build-ids gets its dev/ino under the bit. /dev/vda (254:0), a loop device (7:3) and an
  // overlay (0:45); then perf's own records of ids of 20, 16 and 8 bytes, which stay ids.
  PerfDataBuilder b;
  b.attr({})
      .mmap2(1, 0x1000, 0x1000, 0, "/usr/bin/a", 254, 0, 13894821, 2 | 0x4000)
      .mmap2(1, 0x3000, 0x1000, 0, "/usr/bin/b", 7, 3, 1234567890123, 2 | 0x4000)
      .mmap2(1, 0x5000, 0x1000, 0, "/usr/bin/c", 0, 45, 99, 2 | 0x4000)
      .mmap2_build_id(1, 0x7000, 0x1000, 0, "/usr/bin/d", Bytes(20, 0xab))
      .mmap2_build_id(1, 0x9000, 0x1000, 0, "/usr/bin/e", Bytes(16, 0xcd))
      .mmap2_build_id(1, 0xb000, 0x1000, 0, "/usr/bin/f", Bytes(8, 0xef));
  const Bytes file = b.build();
  const format::Endian e = format::Endian::host();
  const uint64_t at = e.u64(file.data() + 40);
  std::vector<format::MmapRecord> maps;
  for (uint64_t off = at; maps.size() < 6;) {
    const uint16_t size = e.u16(file.data() + off + 6);
    auto m = format::decode_mmap({file.data() + off, size}, e, 0, off);
    ASSERT_TRUE(m.ok()) << m.status();
    maps.push_back(*m);
    off += size;
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(maps[i].has_build_id()) << maps[i].filename;
    EXPECT_TRUE(maps[i].build_id_bit_leaked) << maps[i].filename;
    EXPECT_EQ(maps[i].misc & format::kMiscMmapBuildId, 0) << maps[i].filename;
  }
  EXPECT_EQ(maps[0].maj, 254U);
  EXPECT_EQ(maps[0].ino, 13894821U);
  EXPECT_EQ(maps[1].maj, 7U);
  EXPECT_EQ(maps[1].min, 3U);
  EXPECT_EQ(maps[1].ino, 1234567890123U);
  EXPECT_EQ(maps[2].min, 45U);
  for (size_t i = 3; i < 6; ++i) {
    EXPECT_TRUE(maps[i].has_build_id()) << maps[i].filename;
    EXPECT_FALSE(maps[i].build_id_bit_leaked) << maps[i].filename;
  }
  EXPECT_EQ(maps[3].build_id_size, 20);
  EXPECT_EQ(maps[4].build_id_size, 16);
  EXPECT_EQ(maps[5].build_id_size, 8);
}

}  // namespace
}  // namespace pdfix
