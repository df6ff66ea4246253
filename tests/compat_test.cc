// The newest formats (attr sizes 136/144, record types 22 and 84-86, features 32-34) and
// simpleperf's framing, read and copied unchanged; and the compat pass writing them for an older
// reader, in every shape the fixture builder makes.
#include "passes/compat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "fixture/shapes.h"
#include "format/feature.h"
#include "format/file_header.h"
#include "format/perf_version.h"
#include "format/record_type.h"
#include "format/records.h"
#include "inspect/dump.h"
#include "inspect/info.h"
#include "io/input.h"
#include "transform/open_session.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::AttrSpec;
using testing::Bytes;
using testing::PerfDataBuilder;
using testing::Shape;
using testing::shapes;

constexpr uint64_t kDeferCallchain = uint64_t{1} << 38;
constexpr uint64_t kKernelContext = static_cast<uint64_t>(-128);
constexpr uint64_t kCookie = 0xc00c1e;

Bytes u64s(const format::Endian& e, std::vector<uint64_t> v) {
  Bytes b(8 * v.size());
  for (size_t i = 0; i < v.size(); ++i) e.put_u64(b.data() + 8 * i, v[i]);
  return b;
}

// What perf 7.x writes: 144-byte attrs with deferred callchains, the new record types, the new
// features (and one from further on), and a sample whose user callchain comes later.
PerfDataBuilder newest(const Shape& s, uint64_t config4 = 0) {
  PerfDataBuilder b(s.order);
  if (s.pipe) b.pipe_mode();
  const format::Endian& e = b.endian();
  b.attr({.sample_type = 0x127,
          .size = 144,
          .ids = {7},
          .flags = kDeferCallchain,
          .config4 = config4});
  b.string_feature(format::kFeatHostname, "newest-host");
  b.feature(format::kFeatCpuDomainInfo, u64s(e, {1, 2}));
  b.feature(format::kFeatEMachine, u64s(e, {uint64_t{62} | (uint64_t{0} << 32)}));
  b.feature(format::kFeatClnSize, u64s(e, {64}));
  b.feature(40, u64s(e, {0x40}));
  if (s.pipe) b.raw_record(format::kHeaderFeature, 0, u64s(e, {35}));  // the features' end
  if (s.compressed != 0) b.compress(s.compressed, 48);
  b.comm(10, 10, "app")
      .mmap2(10, 0x400000, 0x1000, 0, "/usr/bin/app", 8, 1, 77)
      .raw_record(format::kBpfMetadata, 0, u64s(e, {1, 2, 3}))
      .raw_record(85, 0, u64s(e, {4}))
      .raw_record(86, 0, u64s(e, {5}))
      .sample_callchain(0xffffffff81000010ULL, 10, 10, 1000,
                        {kKernelContext, 0xffffffff81000010ULL, 0xffffffff81000020ULL,
                         format::kContextUserDeferred, kCookie},
                        format::kCpuModeKernel)
      .finished_round()
      .sample_callchain(0x400100, 10, 10, 1001, {format::kContextUser, 0x400100, 0x400200})
      .callchain_deferred(10, 10, 1002, kCookie, {format::kContextUser, 0x400010, 0x400020})
      .raw_record(99, 0, u64s(e, {6}))
      .finished_round();
  return b;
}

class NewestTest : public ::testing::TestWithParam<Shape> {};

TEST_P(NewestTest, CopiesByteForByte) {
  const Bytes original = newest(GetParam()).build();
  const std::string path = testing::write_temp(original);
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(transform::run_pipeline(*in, path + ".out", {}, {}).ok());
  EXPECT_EQ(testing::read_file(path + ".out"), original);
}

TEST_P(NewestTest, InfoNamesEveryNewType) {
  const std::string path = testing::write_temp(newest(GetParam()).build());
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  auto info = inspect::collect_info(*in);
  ASSERT_TRUE(info.ok()) << info.status();
  for (const char* name :
       {"BPF_METADATA", "SCHEDSTAT_CPU", "SCHEDSTAT_DOMAIN", "CALLCHAIN_DEFERRED", "UNKNOWN(99)"}) {
    EXPECT_EQ(info->record_counts[name], 1U) << name;
  }
  std::vector<std::string> features;
  for (const auto& f : info->features) features.push_back(f.name);
  for (const char* name : {"cpu_domain_info", "e_machine", "cln_size", "feature_40"}) {
    EXPECT_NE(std::find(features.begin(), features.end(), name), features.end()) << name;
  }
  ASSERT_EQ(info->events.size(), 1U);
  EXPECT_EQ(info->events[0].attr_size, 144U);
}

TEST_P(NewestTest, DumpShowsTheAttrTailAndTheDeferredCallchain) {
  const std::string path = testing::write_temp(newest(GetParam(), 0x1234).build());
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  std::ostringstream text;
  ASSERT_TRUE(inspect::dump_records(*in, false, text).ok());
  const std::string dump = text.str();
  // config3 (zero), then config4 = 0x1234 in the file's byte order.
  const std::string tail = GetParam().order == std::endian::big
                               ? "00000000000000000000000000001234"
                               : "00000000000000003412000000000000";
  EXPECT_NE(dump.find("attr_size=144 attr_tail=" + tail), std::string::npos) << dump;
  EXPECT_NE(dump.find("callchain=5 deferred=0xc00c1e"), std::string::npos) << dump;
  EXPECT_NE(dump.find("CALLCHAIN_DEFERRED misc=0x0 size=64 callchain=3 deferred=0xc00c1e"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("SCHEDSTAT_DOMAIN"), std::string::npos);
}

absl::StatusOr<passes::CompatReport> compat(
    const std::string& in_path, const std::string& out, const std::string& version,
    uint64_t look_ahead_bytes = transform::kLookAheadBytes) {
  auto profile = format::reader_profile(version);
  if (!profile.ok()) return profile.status();
  auto in = io::open_input(in_path);
  if (!in.ok()) return in.status();
  auto chain = transform::run_pipeline(
      *in, out,
      [&] {
        transform::PassChain c;
        c.push_back(std::make_unique<passes::Compat>(*profile, look_ahead_bytes));
        return c;
      },
      {});
  if (!chain.ok()) return chain.status();
  return dynamic_cast<const passes::Compat&>(*chain->front()).report();
}

std::vector<uint64_t> callchain(const Bytes& sample, const format::Endian& e) {
  // IP, TID, TIME, PERIOD, then the callchain (sample_type 0x127).
  const uint64_t nr = e.u64(sample.data() + 40);
  std::vector<uint64_t> chain;
  for (uint64_t i = 0; i < nr; ++i) chain.push_back(e.u64(sample.data() + 48 + 8 * i));
  return chain;
}

TEST_P(NewestTest, ForPerf61EverythingIsWhatItReads) {
  const Shape& s = GetParam();
  const std::string path = testing::write_temp(newest(s).build());
  auto report = compat(path, path + ".out", "6.1");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->attrs_shrunk, 1U);
  EXPECT_EQ(report->callchains_stitched, 1U);
  EXPECT_EQ(report->callchains_cut, 0U);
  const std::map<std::string, uint64_t> dropped{
      {"BPF_METADATA", 1}, {"SCHEDSTAT_CPU", 1}, {"SCHEDSTAT_DOMAIN", 1}, {"UNKNOWN(99)", 1}};
  EXPECT_EQ(report->dropped_records, dropped);
  EXPECT_EQ(report->compression, s.compressed == 0 ? "kept" : s.pipe ? "plain" : "COMPRESSED");

  auto out = testing::read_back(path + ".out");
  ASSERT_TRUE(out.ok()) << out.status();
  // Nothing 6.1 does not know is left. The waiting sample goes out where its user callchain
  // came (perf orders samples by time), and the round that ended while it waited after it.
  std::map<uint64_t, std::vector<uint64_t>> chains;  // by sample time
  std::vector<uint32_t> order;
  size_t ends = 0;
  for (size_t i = 0; i < out->types.size(); ++i) {
    EXPECT_LT(out->types[i], 83U) << i;
    EXPECT_NE(out->types[i], 22U);
    if (out->types[i] == format::kSample) {
      const uint64_t time = out->endian.u64(out->bytes[i].data() + 24);
      chains[time] = callchain(out->bytes[i], out->endian);
      order.push_back(static_cast<uint32_t>(time));
    } else if (out->types[i] == format::kFinishedRound) {
      order.push_back(68);
    } else if (out->types[i] == format::kHeaderFeature && out->bytes[i].size() == 16) {
      // The stream's end of features, numbered as perf 6.1 numbers its last.
      EXPECT_EQ(out->endian.u64(out->bytes[i].data() + 8), 32U);
      ++ends;
    }
  }
  EXPECT_EQ(ends, s.pipe ? 1U : 0U);
  EXPECT_EQ(order, (std::vector<uint32_t>{1001, 1000, 68, 68}));
  EXPECT_EQ(chains[1000],
            (std::vector<uint64_t>{kKernelContext, 0xffffffff81000010ULL, 0xffffffff81000020ULL,
                                   format::kContextUser, 0x400010, 0x400020}));
  EXPECT_EQ(chains[1001], (std::vector<uint64_t>{format::kContextUser, 0x400100, 0x400200}));
  if (s.compressed != 0) {
    ASSERT_FALSE(out->compressed.empty() && !s.pipe);
    for (const Bytes& c : out->compressed) {
      EXPECT_EQ(out->endian.u32(c.data()), s.pipe ? 0U : uint32_t{format::kCompressed});
    }
    if (s.pipe) {
      EXPECT_TRUE(out->compressed.empty());
    }
  }

  auto in = io::open_input(path + ".out");
  ASSERT_TRUE(in.ok());
  auto info = inspect::collect_info(*in);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->events.size(), 1U);
  EXPECT_EQ(info->events[0].attr_size, 128U);
  EXPECT_EQ(info->events[0].ids, 1U);
  for (const auto& f : info->features) EXPECT_LT(f.id, 32) << f.name;
  if (!s.pipe && s.compressed != 0) {
    EXPECT_TRUE(std::any_of(info->features.begin(), info->features.end(),
                            [](const auto& f) { return f.id == format::kFeatCompressed; }));
  }
}

// Past the look-ahead's bound the waiting sample goes on at once, without the user callchain that
// has not come (its kernel part kept), and the report counts the early flush.
TEST_P(NewestTest, PastTheLookAheadBoundAWaitingSampleGoesOnWithoutItsUserChain) {
  const std::string path = testing::write_temp(newest(GetParam()).build());
  auto report = compat(path, path + ".out", "6.1", /*look_ahead_bytes=*/1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->callchains_stitched, 0U);
  EXPECT_EQ(report->callchains_cut, 1U);
  EXPECT_EQ(report->early_flushes, 1U);
  auto out = testing::read_back(path + ".out");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(std::count(out->types.begin(), out->types.end(), format::kSample), 2);
  auto whole = compat(path, path + ".whole", "6.1");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->early_flushes, 0U);
}

// A round that ended while a sample waited goes out after that sample, also when the look-ahead
// lets it go early: there, not at the end of the recording.
TEST(Compat, ARoundHeldForAWaitingSampleEndsWhereItsSampleGoesOnEarly) {
  PerfDataBuilder b;
  b.attr({.sample_type = 0x127, .size = 144, .ids = {7}, .flags = kDeferCallchain});
  // Kernel callchains long enough that the bound holds one waiting sample and not two.
  std::vector<uint64_t> kernel(200, 0xffffffff81000010ULL);
  kernel.front() = kKernelContext;
  kernel.push_back(format::kContextUserDeferred);
  kernel.push_back(1);
  b.comm(10, 10, "app")
      .sample_callchain(0xffffffff81000010ULL, 10, 10, 1000, kernel, format::kCpuModeKernel);
  b.finished_round();
  kernel.back() = 2;
  b.sample_callchain(0xffffffff81000010ULL, 10, 10, 1001, kernel, format::kCpuModeKernel)
      .sample_callchain(0x400100, 10, 10, 1002, {format::kContextUser, 0x400100})
      .finished_round();
  const std::string path = testing::write_temp(b.build());
  auto report = compat(path, path + ".out", "6.1", /*look_ahead_bytes=*/2500);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->early_flushes, 1U);
  EXPECT_EQ(report->callchains_cut, 2U);
  auto out = testing::read_back(path + ".out");
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<uint32_t> order;  // sample times, 68 for a round's end
  for (size_t i = 0; i < out->types.size(); ++i) {
    if (out->types[i] == format::kSample) {
      order.push_back(static_cast<uint32_t>(out->endian.u64(out->bytes[i].data() + 24)));
    } else if (out->types[i] == format::kFinishedRound) {
      order.push_back(68);
    }
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{1000, 1001, 68, 1002, 68}));
}

// Attrs too long for perf 6.1 and nothing else to change: the data and what follows it are copied
// as they were, and the header says the attrs' new size.
TEST(Compat, ShrunkAttrsAloneReachTheHeader) {
  PerfDataBuilder b;
  b.attr({.size = 136, .ids = {7}});
  b.comm(10, 10, "app").sample(0x400100, 10, 10, 1000).finished_round();
  b.string_feature(format::kFeatHostname, "host");
  const std::string path = testing::write_temp(b.build());
  auto report = compat(path, path + ".out", "6.1");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->attrs_shrunk, 1U);
  const Bytes out = testing::read_file(path + ".out");
  auto h = format::parse_file_header(out);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->attr_size, 128U + format::kFileSectionSize);
  EXPECT_EQ(h->attrs.size, h->attr_size);
  auto attrs = format::parse_attrs_section(out, *h);
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  ASSERT_EQ(attrs->size(), 1U);
  EXPECT_EQ((*attrs)[0].size, 128U);
  EXPECT_EQ((*attrs)[0].ids, (std::vector<uint64_t>{7}));
}

TEST_P(NewestTest, ASetFieldTheReaderLacksIsRefusedByName) {
  const std::string path = testing::write_temp(newest(GetParam(), 0x1234).build());
  auto report = compat(path, path + ".out", "6.1");
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("config4"), std::string::npos) << report.status();
  EXPECT_FALSE(std::filesystem::exists(path + ".out"));
}

TEST_P(NewestTest, ForTheNewestReaderOnlyATypeNobodyKnowsGoes) {
  const Bytes original = newest(GetParam()).build();
  const std::string path = testing::write_temp(original);
  auto report = compat(path, path + ".out", "7.1");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->dropped_records.size(), 1U);  // type 99 is nobody's
  EXPECT_EQ(report->attrs_shrunk, 0U);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NewestTest, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return info.param.name; });

// perf >= 6.17 writes ids in MMAP2 records and no table; a reader before 5.12 takes them from the
// table only.
TEST_P(NewestTest, ForPerf510IdsMoveFromTheMapsToTheTable) {
  const Shape& s = GetParam();
  PerfDataBuilder b(s.order);
  if (s.pipe) b.pipe_mode();
  b.attr({});
  b.string_feature(format::kFeatHostname, "host");
  if (s.compressed != 0) b.compress(s.compressed, 48);
  b.mmap2_build_id(-1, 0xffffffff81000000ULL, 0x1000000, 0xffffffff81000000ULL,
                   "[kernel.kallsyms]_text", Bytes(20, 0x11), format::kCpuModeKernel)
      .mmap2_build_id(10, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0x22))
      .mmap2_build_id(11, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0x22))
      .sample(0x400010, 10, 10, 1000);
  const std::string path = testing::write_temp(b.build());
  auto report = compat(path, path + ".out", "5.10");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->build_id_maps_made_plain, 3U);
  EXPECT_EQ(report->table_entries_added, 2U);
  auto out = testing::read_back(path + ".out");
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < out->types.size(); ++i) {
    if (out->types[i] != format::kMmap2) continue;
    auto m = format::decode_mmap(out->bytes[i], out->endian, out->trailers[i], 0);
    ASSERT_TRUE(m.ok());
    EXPECT_FALSE(m->has_build_id());
  }
  ASSERT_EQ(out->table.size(), 2U);
  EXPECT_EQ(out->table[0].filename, "[kernel.kallsyms]");
  EXPECT_EQ(format::build_id_hex(out->table[0]), std::string(40, '1'));
  EXPECT_EQ(out->table[1].filename, "/usr/bin/app");
  EXPECT_EQ(format::build_id_hex(out->table[1]), std::string(40, '2'));
}

TEST(ReaderProfile, NamesWhatEachVersionReads) {
  auto p61 = format::reader_profile("6.1");
  ASSERT_TRUE(p61.ok());
  EXPECT_EQ(p61->attr_size, 128U);
  EXPECT_TRUE(p61->knows_type(format::kAuxOutputHwId));
  EXPECT_FALSE(p61->knows_type(format::kCallchainDeferred));
  EXPECT_TRUE(p61->knows_type(format::kFinishedInit));
  EXPECT_FALSE(p61->knows_type(format::kCompressed2));
  EXPECT_EQ(p61->features_end, 32);
  EXPECT_TRUE(p61->compressed);
  EXPECT_FALSE(p61->compressed_in_pipe);
  EXPECT_TRUE(p61->build_id_mmap2);
  auto release = format::reader_profile("5.10.0-21-amd64");
  ASSERT_TRUE(release.ok());
  EXPECT_EQ(release->version, (format::PerfVersion{5, 10}));
  EXPECT_FALSE(release->build_id_mmap2);
  auto oldest = format::reader_profile("oldest");
  ASSERT_TRUE(oldest.ok());
  EXPECT_EQ(oldest->attr_size, 96U);
  EXPECT_FALSE(oldest->compressed);
  EXPECT_FALSE(format::reader_profile("3.2").ok());
  EXPECT_FALSE(format::reader_profile("six").ok());
  EXPECT_FALSE(format::reader_profile("6.1x").ok());
}

// simpleperf's framing: its own record types keep the high half of a 32-bit size in misc, and
// its TRACING_DATA counts the payload in header.size.
Bytes simpleperf_recording(std::endian order, bool marked) {
  PerfDataBuilder b(order);
  const format::Endian& e = b.endian();
  b.attr({});
  // A foreign-order bitmap is read by the HOSTNAME bit, as perf reads it.
  b.string_feature(format::kFeatHostname, "android");
  if (marked) b.feature(129, Bytes(8, 0));  // FEAT_META_INFO
  Bytes tracing(8 + 4 + 64, 0);
  e.put_u32(tracing.data(), format::kHeaderTracingData);
  e.put_u16(tracing.data() + 6, static_cast<uint16_t>(tracing.size()));
  e.put_u32(tracing.data() + 8, 40);
  Bytes symbols(0x10008, 0x5a);  // 64 KiB and 8 bytes: the size does not fit 16 bits
  e.put_u32(symbols.data(), 32769);
  e.put_u16(symbols.data() + 4, 1);
  e.put_u16(symbols.data() + 6, 8);
  b.whole_record(tracing).whole_record(symbols).comm(10, 10, "app").sample(0x400010, 10, 10, 1);
  return b.build();
}

class SimpleperfTest : public ::testing::TestWithParam<std::endian> {};

TEST_P(SimpleperfTest, FramedAsSimpleperfWritesAndCopiedByteForByte) {
  const Bytes original = simpleperf_recording(GetParam(), true);
  const std::string path = testing::write_temp(original);
  auto read = testing::read_back(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->types, (std::vector<uint32_t>{66, 32769, 3, 9}));
  EXPECT_EQ(read->bytes[1].size(), 0x10008U);
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(transform::run_pipeline(*in, path + ".out", {}, {}).ok());
  EXPECT_EQ(testing::read_file(path + ".out"), original);
}

TEST_P(SimpleperfTest, WithoutItsMarkTheSameBytesAreNotMisframedSilently) {
  // Read as perf's, the TRACING_DATA claims 40 payload bytes past its 76: the records after it
  // cannot all be framed, and the reader says so rather than inventing records.
  const std::string path = testing::write_temp(simpleperf_recording(GetParam(), false));
  auto read = testing::read_back(path);
  EXPECT_FALSE(read.ok() && read->types == (std::vector<uint32_t>{66, 32769, 3, 9}));
}

INSTANTIATE_TEST_SUITE_P(BothOrders, SimpleperfTest,
                         ::testing::Values(std::endian::little, std::endian::big),
                         [](const auto& info) {
                           return info.param == std::endian::big ? "Big" : "Little";
                         });

}  // namespace
}  // namespace pdfix
