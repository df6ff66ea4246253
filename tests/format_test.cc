// The format layer: byte order, headers, attrs, feature and record decoders.
#include <gtest/gtest.h>

#include "fixture/perf_data_builder.h"
#include "format/attr.h"
#include "format/byte_order.h"
#include "format/feature.h"
#include "format/file_header.h"
#include "format/record_type.h"
#include "format/records.h"
#include "format/sample_fields.h"

namespace pdfix {
namespace {

using testing::AttrSpec;
using testing::Bytes;
using testing::PerfDataBuilder;

TEST(Endian, ReadsAndWritesInFileOrder) {
  const uint8_t be[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  auto big = format::Endian::of(std::endian::big);
  auto little = format::Endian::of(std::endian::little);
  EXPECT_EQ(big.u16(be), 0x0102);
  EXPECT_EQ(big.u32(be), 0x01020304U);
  EXPECT_EQ(big.u64(be), 0x0102030405060708ULL);
  EXPECT_EQ(little.u32(be), 0x04030201U);
  uint8_t out[8] = {};
  big.put_u64(out, 0x1122334455667788ULL);
  EXPECT_EQ(out[0], 0x11);
  EXPECT_EQ(out[7], 0x88);
}

TEST(Endian, BigEndianAttrFlagsAreBitReversed) {
  // On a big-endian host the first bitfield (`disabled`, bit 0) is the top bit of the word.
  auto big = format::Endian::of(std::endian::big);
  uint8_t word[8] = {0x80, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(big.attr_flags(word), 1U);
  uint8_t out[8] = {};
  big.put_attr_flags(out, format::kAttrSampleIdAll);
  EXPECT_EQ(big.attr_flags(out), format::kAttrSampleIdAll);
  // sample_id_all is bit 18: byte 2, bit 5 counted from the top.
  EXPECT_EQ(out[2], 0x20);
}

class HeaderTest : public ::testing::TestWithParam<std::endian> {
 protected:
  // One attr with two event ids, a record, and two features.
  Bytes two_features() const {
    return PerfDataBuilder(GetParam())
        .attr({.ids = {7, 8}})
        .comm(1, 1, "a")
        .string_feature(format::kFeatHostname, "host")
        .string_feature(format::kFeatArch, "s390x")
        .build();
  }
};

TEST_P(HeaderTest, ParsesFileHeaderAndFeatureTable) {
  const Bytes file = two_features();
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_FALSE(h->pipe);
  EXPECT_EQ(h->endian.is_big(), GetParam() == std::endian::big);
  EXPECT_EQ(h->header_size, 104U);
  EXPECT_EQ(h->attr_size, 128U + 16);
  EXPECT_TRUE(h->features[format::kFeatHostname]);
  EXPECT_TRUE(h->features[format::kFeatArch]);
  EXPECT_EQ(h->features.count(), 2U);
  auto table = format::parse_feature_table(file, *h);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 2U);
  auto arch = format::decode_string_feature(
      {std::span<const uint8_t>(file).subspan((*table)[1].section.offset, (*table)[1].section.size),
       h->endian, 0});
  ASSERT_TRUE(arch.ok());
  EXPECT_EQ(*arch, "s390x");
}

TEST_P(HeaderTest, ParsesLegacyHeader) {
  Bytes file = PerfDataBuilder(GetParam()).legacy_header().attr({}).comm(1, 1, "a").build();
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->legacy_magic);
  EXPECT_EQ(h->header_size, 72U);
  EXPECT_EQ(h->endian.is_big(), GetParam() == std::endian::big);
  EXPECT_EQ(h->features.count(), 0U);
}

TEST_P(HeaderTest, ParsesPipeHeader) {
  Bytes file = PerfDataBuilder(GetParam()).pipe_mode().attr({}).comm(1, 1, "a").build();
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_TRUE(h->pipe);
  EXPECT_EQ(h->endian.is_big(), GetParam() == std::endian::big);
}

// What format writes into a header, the feature table and a stream's start is what the
// fixture's builder (which writes them by hand) put there.
TEST_P(HeaderTest, WritesTheHeaderFieldsAndFeatureTableTheBuilderWrote) {
  const Bytes file = two_features();
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok()) << h.status();
  const Bytes original(file.begin(), file.begin() + format::kFileHeaderSize);
  Bytes image = original;
  std::fill(image.begin() + 16, image.end(), 0);
  format::patch_file_header(image, *h);
  EXPECT_EQ(std::vector(image.begin(), image.begin() + 72),
            std::vector(original.begin(), original.begin() + 72));
  format::patch_feature_bits(image, *h);
  EXPECT_EQ(image, original);

  auto table = format::parse_feature_table(file, *h);
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<format::FeatureSection> reversed(table->rbegin(), table->rend());
  const Bytes encoded = format::encode_feature_table(reversed, h->endian);
  EXPECT_EQ(encoded, Bytes(file.begin() + static_cast<ptrdiff_t>(h->data.end()),
                           file.begin() + static_cast<ptrdiff_t>(h->data.end() + encoded.size())));

  auto attrs = format::parse_attrs_section(file, *h);
  ASSERT_TRUE(attrs.ok()) << attrs.status();
  ASSERT_EQ(attrs->size(), 1U);
  EXPECT_EQ((*attrs)[0].ids, (std::vector<uint64_t>{7, 8}));
  // An ids section that points past the file's end is an error, not a read.
  Bytes broken = file;
  h->endian.put_u64(broken.data() + h->attrs.offset + h->attr_size - 16, broken.size());
  EXPECT_FALSE(format::parse_attrs_section(broken, *h).ok());

  const Bytes stream = PerfDataBuilder(GetParam()).pipe_mode().attr({}).build();
  EXPECT_EQ(format::encode_pipe_header(h->endian),
            Bytes(stream.begin(), stream.begin() + format::kPipeHeaderSize));
}

INSTANTIATE_TEST_SUITE_P(BothOrders, HeaderTest,
                         ::testing::Values(std::endian::little, std::endian::big),
                         [](const auto& info) {
                           return info.param == std::endian::big ? "Big" : "Little";
                         });

TEST(Header, SwappedBitmapWrittenWith32BitWords) {
  // A big-endian 32-bit host wrote the bitmap as u32 words: HOSTNAME (bit 3) sits in the first
  // u32, which read as a u64 would put it at bit 35.
  Bytes file = PerfDataBuilder(std::endian::big).attr({}).string_feature(3, "h").build();
  std::fill(file.begin() + 72, file.begin() + 104, 0);
  file[75] = 0x08;  // first big-endian u32 = 0x00000008
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->features[3]);
  EXPECT_EQ(h->features.count(), 1U);
}

TEST(Header, RejectsWhatIsNoPerfData) {
  Bytes junk(200, 0x41);
  auto h = format::parse_file_header(junk);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("bad magic"), std::string::npos);
  EXPECT_FALSE(format::parse_file_header(Bytes{'P', 'E'}).ok());
}

TEST(Header, RejectsSectionsPastTheEnd) {
  Bytes file = PerfDataBuilder().attr({}).comm(1, 1, "a").build();
  file.resize(file.size() - 8);  // the data section now runs past the end
  auto h = format::parse_file_header(file);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("data section"), std::string::npos) << h.status();
  EXPECT_NE(h.status().message().find("offset 0x28"), std::string::npos) << h.status();
}

TEST(Attr, TrailerLayoutFollowsSampleType) {
  format::EventAttr a;
  a.flags = format::kAttrSampleIdAll;
  a.sample_type = format::kSampleIp | format::kSampleTid | format::kSampleTime |
                  format::kSampleCpu | format::kSamplePeriod | format::kSampleIdentifier;
  EXPECT_EQ(a.trailer_size(), 8U * 4);  // TID, TIME, CPU, IDENTIFIER
  a.flags = 0;
  EXPECT_EQ(a.trailer_size(), 0U);
  EXPECT_EQ(format::sample_id_position(format::kSampleIdentifier | format::kSampleIp), 0U);
  EXPECT_EQ(format::sample_id_position(format::kSampleIp | format::kSampleTid | format::kSampleId),
            2U);
  EXPECT_EQ(format::trailer_id_position_from_end(format::kSampleId | format::kSampleCpu), 2U);
  EXPECT_EQ(format::sample_id_position(format::kSampleIp), std::nullopt);
}

TEST(Records, Mmap2WithBuildIdKeepsEverythingElse) {
  const format::Endian e = format::Endian::of(std::endian::big);
  format::MmapRecord m;
  m.misc = format::kCpuModeUser | format::kMiscMmapData;
  m.pid = 42;
  m.tid = 43;
  m.start = 0x400000;
  m.len = 0x1000;
  m.pgoff = 0x2000;
  m.filename = "/usr/lib/libfoo.so";
  const Bytes id = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const Bytes trailer = {1, 2, 3, 4, 5, 6, 7, 8};
  Bytes rec = format::encode_mmap2_with_build_id(m, id, trailer, e);
  EXPECT_EQ(rec.size() % 8, 0U);
  EXPECT_TRUE(std::equal(trailer.begin(), trailer.end(), rec.end() - 8));
  auto back = format::decode_mmap(rec, e, 8, 0);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->is_mmap2);
  EXPECT_TRUE(back->has_build_id());
  EXPECT_EQ(back->misc & format::kCpuModeMask, format::kCpuModeUser);
  EXPECT_TRUE(back->misc & format::kMiscMmapData);
  EXPECT_EQ(back->pid, 42U);
  EXPECT_EQ(back->tid, 43U);
  EXPECT_EQ(back->start, 0x400000U);
  EXPECT_EQ(back->len, 0x1000U);
  EXPECT_EQ(back->pgoff, 0x2000U);
  EXPECT_EQ(back->build_id_size, 20);
  EXPECT_TRUE(std::equal(id.begin(), id.end(), back->build_id.begin()));
  EXPECT_EQ(back->filename, "/usr/lib/libfoo.so");
  EXPECT_EQ(back->prot, 1U);  // a data mapping: readable, not executable
}

TEST(Header, AFileWhosePerfWasKilledIsSaidToBeUnfinished) {
  // perf record killed: the header still says data size 0, records follow, and the feature
  // table perf would have written after them is not there.
  PerfDataBuilder b;
  b.attr({}).string_feature(3, "host");
  for (int i = 0; i < 100; ++i) b.comm(1, 1, "a-process-name");
  Bytes file = b.build();
  const format::Endian e = format::Endian::host();
  const uint64_t data_offset = e.u64(file.data() + 40);
  const uint64_t data_size = e.u64(file.data() + 48);
  e.put_u64(file.data() + 48, 0);
  file.resize(data_offset + data_size);
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok()) << h.status();
  auto table = format::parse_feature_table(file, *h);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("header was never finished"), std::string::npos)
      << table.status();
  EXPECT_NE(table.status().message().find("perf record was killed"), std::string::npos);
}

TEST(Records, ShortRecordIsAnErrorNotARead) {
  const format::Endian e = format::Endian::host();
  Bytes rec(24, 0);
  e.put_u32(rec.data(), 1);
  e.put_u16(rec.data() + 6, 24);
  auto m = format::decode_mmap(rec, e, 0, 0x1234);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("0x1234"), std::string::npos);
}

TEST(Features, BuildIdTableHonoursSizeBit) {
  PerfDataBuilder b;
  b.attr({})
      .build_id_entry(0x8000 | 1, -1, Bytes(20, 0xab), "[kernel.kallsyms]")
      .build_id_entry(0x8000 | 2, 77, Bytes(16, 0xcd), "/bin/true");
  Bytes file = b.build();
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok());
  auto table = format::parse_feature_table(file, *h);
  ASSERT_TRUE(table.ok());
  const auto& s = table->front().section;
  auto entries = format::decode_build_id_table(
      {std::span<const uint8_t>(file).subspan(s.offset, s.size), h->endian, s.offset});
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2U);
  EXPECT_EQ((*entries)[0].filename, "[kernel.kallsyms]");
  EXPECT_EQ((*entries)[0].pid, -1);
  EXPECT_EQ(format::build_id_hex((*entries)[0]), "abababababababababababababababababababab");
  EXPECT_EQ((*entries)[1].id_size, 16);
  EXPECT_EQ(format::build_id_hex((*entries)[1]), "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd");
}
}  // namespace
}  // namespace pdfix

namespace pdfix {
namespace {

TEST(Trailer, ReadsAndWritesTheTaskAndTimeWhereSampleTypePutsThem) {
  const format::Endian e = format::Endian::of(std::endian::big);
  // TID, TIME, CPU: pid 7, tid 8, time 0x1122334455, cpu 3.
  std::vector<uint8_t> trailer(24);
  e.put_u32(trailer.data(), 7);
  e.put_u32(trailer.data() + 4, 8);
  e.put_u64(trailer.data() + 8, 0x1122334455);
  e.put_u32(trailer.data() + 16, 3);
  const uint64_t type = format::kSampleTid | format::kSampleTime | format::kSampleCpu;
  const format::TrailerFields f = format::decode_trailer(trailer, e, type);
  EXPECT_EQ(f.pid, 7u);
  EXPECT_EQ(f.tid, 8u);
  EXPECT_EQ(f.time, 0x1122334455u);
  // Without TID the time comes first; a trailer too short for a field has none of it.
  EXPECT_EQ(format::decode_trailer(trailer, e, format::kSampleTime).time, 0x0000000700000008u);
  EXPECT_EQ(format::decode_trailer(std::span(trailer).first(12), e, type).time, std::nullopt);
  format::encode_trailer(trailer, e, type, {.tid = 9, .time = 5});
  EXPECT_EQ(e.u32(trailer.data()), 7u);  // no pid given: kept
  EXPECT_EQ(e.u32(trailer.data() + 4), 9u);
  EXPECT_EQ(e.u64(trailer.data() + 8), 5u);
  EXPECT_EQ(e.u32(trailer.data() + 16), 3u);
}

// A SAMPLE of IP | TID | TIME | CALLCHAIN | PERIOD | RAW: ip 0x10, pid/tid 1, time 2, period 9,
// `chain`, 4 raw bytes.
std::vector<uint8_t> sample_with(const format::Endian& e, const std::vector<uint64_t>& chain) {
  std::vector<uint8_t> r(8 + 8 * 5 + 8 * chain.size() + 8);
  e.put_u64(r.data() + 8, 0x10);
  e.put_u32(r.data() + 16, 1);
  e.put_u32(r.data() + 20, 1);
  e.put_u64(r.data() + 24, 2);
  e.put_u64(r.data() + 32, 9);
  e.put_u64(r.data() + 40, chain.size());
  for (size_t i = 0; i < chain.size(); ++i) e.put_u64(r.data() + 48 + 8 * i, chain[i]);
  e.put_u32(r.data() + r.size() - 8, 4);
  e.put_u32(r.data() + r.size() - 4, 0xaabbccdd);
  format::write_record_header(e, r.data(), {format::kSample, 2, static_cast<uint16_t>(r.size())});
  return r;
}

TEST(Callchain, ADeferredSampleIsCompletedInPlaceByItsCookiesRecord) {
  const format::Endian e = format::Endian::of(std::endian::little);
  format::EventAttr attr;
  attr.sample_type = format::kSampleIp | format::kSampleTid | format::kSampleTime |
                     format::kSampleCallchain | format::kSamplePeriod | format::kSampleRaw;
  const std::vector<uint64_t> kernel{format::kContextKernel, 0xffff1000,
                                     format::kContextUserDeferred, 0x77};
  const auto sample = sample_with(e, kernel);
  auto fields = format::locate_sample_fields(sample, e, attr, 0);
  ASSERT_TRUE(fields.ok()) << fields.status();
  const std::vector<uint64_t> entries = format::callchain_entries(sample, e, *fields);
  EXPECT_EQ(entries, kernel);
  EXPECT_EQ(format::deferred_cookie(entries), 0x77u);
  EXPECT_EQ(format::deferred_cookie(std::span(entries).first(3)), std::nullopt);
  EXPECT_EQ(format::deferred_cookie(std::span(entries).first(1)), std::nullopt);

  // CALLCHAIN_DEFERRED {cookie 0x77, nr 2, ips}, an 8-byte trailer.
  std::vector<uint8_t> deferred(8 + 16 + 16 + 8);
  e.put_u64(deferred.data() + 8, 0x77);
  e.put_u64(deferred.data() + 16, 2);
  e.put_u64(deferred.data() + 24, 0x401000);
  e.put_u64(deferred.data() + 32, 0x402000);
  auto d = format::decode_callchain_deferred(deferred, e, 8, 0x100);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->cookie, 0x77u);
  EXPECT_EQ(d->ips, (std::vector<uint64_t>{0x401000, 0x402000}));
  e.put_u64(deferred.data() + 16, 3);  // one more than the record holds before its trailer
  auto claims = format::decode_callchain_deferred(deferred, e, 8, 0x100);
  ASSERT_FALSE(claims.ok());
  EXPECT_NE(claims.status().message().find("0x100"), std::string::npos) << claims.status();

  const std::vector<uint64_t> whole{format::kContextKernel, 0xffff1000, format::kContextUser,
                                    0x401000, 0x402000};
  auto stitched = format::with_callchain(sample, e, *fields, whole, 0);
  ASSERT_TRUE(stitched.ok()) << stitched.status();
  EXPECT_EQ(*stitched, sample_with(e, whole));
}

TEST(Records, HeaderFeatureAndAttrSizeFieldsAreReadAndWrittenInFileOrder) {
  const format::Endian e = format::Endian::of(std::endian::big);
  std::vector<uint8_t> feature(16);
  EXPECT_EQ(format::header_feature_id(std::span(feature).first(15), e), std::nullopt);
  format::set_header_feature_id(feature, e, 31);
  EXPECT_EQ(feature[15], 31);
  EXPECT_EQ(format::header_feature_id(feature, e), 31u);
  std::vector<uint8_t> attr(format::kAttrSizeVer0);
  format::set_stored_attr_size(attr, e, 136);
  EXPECT_EQ(attr[7], 136);
  EXPECT_EQ(format::stored_attr_size(attr, e), 136u);
  EXPECT_EQ(format::stored_attr_size(std::span(attr).first(7), e), std::nullopt);
}
}  // namespace
}  // namespace pdfix

namespace pdfix {
namespace {

TEST(Attr, AnEventIdIsReadWhereSampleTypePutsIt) {
  const format::Endian e = format::Endian::of(std::endian::big);
  const uint64_t type = format::kSampleIp | format::kSampleId | format::kSampleCpu;
  // SAMPLE: ip, id, cpu.
  std::vector<uint8_t> sample(8 + 24);
  e.put_u64(sample.data() + 16, 77);
  EXPECT_EQ(format::record_event_id(sample, format::kSample, e, type, true), 77u);
  EXPECT_EQ(format::record_event_id(std::span(sample).first(16), format::kSample, e, type, true),
            std::nullopt);
  // COMM: its trailer id, cpu; none without sample_id_all, none for a user record.
  std::vector<uint8_t> comm(8 + 16 + 16);
  e.put_u64(comm.data() + comm.size() - 16, 78);
  EXPECT_EQ(format::record_event_id(comm, format::kComm, e, type, true), 78u);
  EXPECT_EQ(format::record_event_id(comm, format::kComm, e, type, false), std::nullopt);
  EXPECT_EQ(format::record_event_id(comm, format::kFinishedRound, e, type, true), std::nullopt);
}

TEST(Attr, AStreamsAttrRecordCarriesItsEventIds) {
  const format::Endian e = format::Endian::of(std::endian::big);
  std::vector<uint8_t> record(format::kRecordHeaderSize + format::kAttrSizeVer0 + 16);
  std::span<uint8_t> body = std::span(record).subspan(format::kRecordHeaderSize);
  format::set_stored_attr_size(body, e, format::kAttrSizeVer0);
  e.put_u64(body.data() + format::kAttrSizeVer0, 5);
  e.put_u64(body.data() + format::kAttrSizeVer0 + 8, 6);
  auto attr = format::decode_attr_record(record, e, 0);
  ASSERT_TRUE(attr.ok()) << attr.status();
  EXPECT_EQ(attr->ids, (std::vector<uint64_t>{5, 6}));
  // An attr said to be longer than the record.
  format::set_stored_attr_size(body, e, 128);
  EXPECT_FALSE(format::decode_attr_record(record, e, 0).ok());
  EXPECT_FALSE(format::decode_attr_record(std::span(record).first(4), e, 0).ok());
}

TEST(Records, ACompressedRecordIsFinishedAsTheReaderTakesItApart) {
  const format::Endian e = format::Endian::of(std::endian::big);
  const Bytes zstd = {1, 2, 3, 4, 5};
  for (const uint32_t type : {uint32_t{format::kCompressed}, uint32_t{format::kCompressed2}}) {
    Bytes record(format::compressed_header_size(type), 0);
    record.insert(record.end(), zstd.begin(), zstd.end());
    ASSERT_TRUE(format::finish_compressed_record(record, type, e).ok());
    const format::RecordHeader h = format::read_record_header(e, record.data());
    EXPECT_EQ(h.type, type);
    EXPECT_EQ(h.size, record.size());
    // COMPRESSED ends with its data; COMPRESSED2 pads it to 8.
    EXPECT_EQ(record.size(), type == format::kCompressed2 ? 24U : 13U);
    auto payload = format::compressed_payload(record, e, 0);
    ASSERT_TRUE(payload.ok()) << payload.status();
    EXPECT_EQ(Bytes(payload->begin(), payload->end()), zstd);
  }
  Bytes huge(format::kCompressed2HeaderSize + 70000, 0);
  EXPECT_FALSE(format::finish_compressed_record(huge, format::kCompressed2, e).ok());
}

TEST(Records, AnMmapsProtAndFlagsAreThoseOfItsMapping) {
  format::MmapRecord m;
  m.misc = format::kCpuModeUser;
  EXPECT_EQ(format::mmap2_prot_flags(m).prot, 5U);   // PROT_READ | PROT_EXEC
  EXPECT_EQ(format::mmap2_prot_flags(m).flags, 2U);  // MAP_PRIVATE
  m.misc |= format::kMiscMmapData;
  EXPECT_EQ(format::mmap2_prot_flags(m).prot, 1U);
  m.is_mmap2 = true;
  m.prot = 3;
  m.flags = 1;
  EXPECT_EQ(format::mmap2_prot_flags(m).prot, 3U);
  EXPECT_EQ(format::mmap2_prot_flags(m).flags, 1U);
}

TEST(Records, PayloadsBeyondTheRecordSizeAreReadFromTheirFixedPart) {
  const format::Endian e = format::Endian::of(std::endian::big);
  std::vector<uint8_t> aux(format::kAuxtraceRecordSize);
  e.put_u64(aux.data() + 8, uint64_t{1} << 33);
  EXPECT_EQ(format::unframed_payload_size(aux, format::kAuxtrace, e), uint64_t{1} << 33);
  EXPECT_EQ(format::unframed_payload_size(std::span(aux).first(47), format::kAuxtrace, e),
            std::nullopt);
  std::vector<uint8_t> tracing(format::kTracingDataRecordSize);
  e.put_u32(tracing.data() + 8, 4096);
  EXPECT_EQ(format::unframed_payload_size(tracing, format::kHeaderTracingData, e), 4096U);
  EXPECT_EQ(format::unframed_payload_size(tracing, format::kComm, e), 0U);
}

TEST(Features, CompressionLevelAndDirectoryVersionAreReadAndWrittenInFileOrder) {
  const format::Endian e = format::Endian::of(std::endian::big);
  std::vector<uint8_t> compressed(20);
  e.put_u32(compressed.data() + 4, 1);  // zstd
  e.put_u32(compressed.data() + 8, 1);
  const std::vector<uint8_t> leveled = format::with_compression_level({compressed, e, 0}, 19);
  auto info = format::decode_compressed({leveled, e, 0});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->type, 1U);
  EXPECT_EQ(info->level, 19U);
  EXPECT_TRUE(format::with_compression_level({std::span(compressed).first(11), e, 0}, 3).empty());
  std::vector<uint8_t> dir(8);
  e.put_u64(dir.data(), 1);
  EXPECT_EQ(format::dir_format_version({dir, e, 0}), 1U);
  EXPECT_EQ(format::dir_format_version({std::span(dir).first(7), e, 0}), std::nullopt);
}

}  // namespace
}  // namespace pdfix
