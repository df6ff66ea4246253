// A SAMPLE's fields where its event's sample_type and read_format put them
// (format/sample_layout.h): each head field, the callchain past READ values of a fixed size and of
// a group's, in either byte order; a record shorter than its fields an error naming where it lies.
#include "format/sample_layout.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "format/attr.h"
#include "format/byte_order.h"
#include "format/record_type.h"

namespace pdfix::format {
namespace {

constexpr uint64_t kEnabled = 1, kRunning = 2, kId = 4, kGroup = 8;

// A SAMPLE record of `words` after its header, in `e`'s order (TID's and CPU's two u32s given as
// one word each, the first in the low half as a little-endian writer lays them out).
std::vector<uint8_t> sample(const Endian& e, const std::vector<uint64_t>& words) {
  std::vector<uint8_t> r(kRecordHeaderSize + 8 * words.size());
  write_record_header(e, r.data(), {kSample, 0, static_cast<uint16_t>(r.size())});
  for (size_t i = 0; i < words.size(); ++i)
    e.put_u64(r.data() + kRecordHeaderSize + 8 * i, words[i]);
  return r;
}

TEST(SampleLayout, EachHeadFieldWhereItsSampleTypePutsIt) {
  const uint64_t st = kSampleIdentifier | kSampleIp | kSampleTid | kSampleTime | kSampleAddr |
                      kSampleId | kSampleStreamId | kSampleCpu | kSamplePeriod;
  const Endian e = Endian::host();
  std::vector<uint8_t> r = sample(e, {11, 0x401000, 0, 33, 44, 55, 66, 0, 77});
  e.put_u32(r.data() + 24, 1234);  // pid
  e.put_u32(r.data() + 28, 1235);  // tid
  e.put_u32(r.data() + 64, 3);     // cpu
  auto h = SampleLayout(st, 0).head(r, e, 0);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->identifier, 11u);
  EXPECT_EQ(h->ip, 0x401000u);
  EXPECT_EQ(h->pid, 1234u);
  EXPECT_EQ(h->tid, 1235u);
  EXPECT_EQ(h->time, 33u);
  EXPECT_EQ(h->addr, 44u);
  EXPECT_EQ(h->id, 55u);
  EXPECT_EQ(h->stream_id, 66u);
  EXPECT_EQ(h->cpu, 3u);
  EXPECT_EQ(h->period, 77u);
  EXPECT_EQ(h->end, 80u);
  // Without the fields before it, a field moves up.
  auto ip_period = SampleLayout(kSampleIp | kSamplePeriod, 0).head(sample(e, {0x402000, 9}), e, 0);
  ASSERT_TRUE(ip_period.ok());
  EXPECT_EQ(ip_period->ip, 0x402000u);
  EXPECT_EQ(ip_period->period, 9u);
  EXPECT_EQ(ip_period->end, 24u);
}

TEST(SampleLayout, TheCallchainPastReadValuesOfEitherSize) {
  const uint64_t st = kSampleIp | kSampleRead | kSampleCallchain;
  for (const Endian e : {Endian::host(), Endian::swapped()}) {
    // READ of one counter: its value, time enabled and running, id.
    const std::vector<uint8_t> one = sample(e, {0x401000, 5, 6, 7, 8, 2, 0x401000, 0x402000});
    const SampleLayout fixed(st, kEnabled | kRunning | kId);
    auto h = fixed.head(one, e, 0);
    ASSERT_TRUE(h.ok());
    std::vector<uint64_t> chain{1};
    ASSERT_TRUE(fixed.callchain(one, e, *h, 0, chain).ok());
    EXPECT_EQ(chain, (std::vector<uint64_t>{1, 0x401000, 0x402000}));
    // A group's READ: nr, then a value and an id each.
    const std::vector<uint8_t> group = sample(e, {0x401000, 2, 10, 100, 20, 200, 1, 0x403000});
    const SampleLayout grouped(st, kGroup | kId);
    h = grouped.head(group, e, 0);
    ASSERT_TRUE(h.ok());
    chain.clear();
    ASSERT_TRUE(grouped.callchain(group, e, *h, 0, chain).ok());
    EXPECT_EQ(chain, (std::vector<uint64_t>{0x403000}));
    auto at = grouped.callchain_at(group, e, *h, 0);
    ASSERT_TRUE(at.ok());
    EXPECT_EQ(*at, 56u);  // the header, the ip, nr and two values with their ids
  }
}

TEST(SampleLayout, ARecordShorterThanItsFieldsIsAnErrorNamingItsOffset) {
  const Endian e = Endian::host();
  const uint64_t st = kSampleIp | kSampleTid | kSampleTime | kSampleCallchain;
  const SampleLayout layout(st, 0);
  auto h = layout.head(sample(e, {0x401000, 0}), e, 0x1230);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(std::string(h.status().message()).find("0x1230"), std::string::npos) << h.status();
  // A callchain that claims more entries than the record holds.
  const std::vector<uint8_t> r = sample(e, {0x401000, 0, 1, 3, 0x401000});
  h = layout.head(r, e, 0x40);
  ASSERT_TRUE(h.ok());
  std::vector<uint64_t> chain;
  const absl::Status s = layout.callchain(r, e, *h, 0x40, chain);
  EXPECT_NE(std::string(s.message()).find("3 entries exceeds the record"), std::string::npos) << s;
  EXPECT_TRUE(chain.empty());
  // A fixed READ past the record's end.
  const SampleLayout read(kSampleIp | kSampleRead | kSampleCallchain, kEnabled | kRunning);
  const std::vector<uint8_t> cut = sample(e, {0x401000, 5});
  h = read.head(cut, e, 0);
  ASSERT_TRUE(h.ok());
  EXPECT_NE(std::string(read.callchain(cut, e, *h, 0, chain).message()).find("ends in its READ"),
            std::string::npos);
}

}  // namespace
}  // namespace pdfix::format
