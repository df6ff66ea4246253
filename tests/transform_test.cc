// Reader, pipeline and writer over synthetic recordings of every shape the fixture builder makes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fixture/chain.h"
#include "fixture/fake_build_id_pass.h"
#include "fixture/grown.h"
#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "format/records.h"
#include "io/input.h"
#include "transform/open_session.h"
#include "transform/pipeline.h"
#include "transform/reader.h"

namespace pdfix {
namespace {

using testing::AttrSpec;
using testing::Bytes;
using testing::grow_mmaps;
using testing::grown;
using testing::PerfDataBuilder;

struct Shape {
  std::string name;
  std::endian order;
  bool pipe;
  uint32_t compressed;  // 0, 81 or 83
};

// A recording with a bit of everything, in the given shape.
PerfDataBuilder recording(const Shape& s) {
  PerfDataBuilder b(s.order);
  if (s.pipe) b.pipe_mode();
  b.attr({.sample_type = 0x107 | (1ULL << 16), .ids = {100, 101}});
  b.string_feature(format::kFeatHostname, "fixture-host");
  b.string_feature(format::kFeatArch, "x86_64");
  b.build_id_entry(0x8000 | 1, -1, Bytes(20, 0x11), "[kernel.kallsyms]");
  if (s.compressed != 0) b.compress(s.compressed, 40);  // small chunks: records straddle them
  b.comm(10, 10, "app")
      .mmap(-1, 0xffffffff81000000ULL, 0x1000000, 0xffffffff81000000ULL, "[kernel.kallsyms]_text",
            format::kCpuModeKernel)
      .mmap(10, 0x400000, 0x1000, 0, "/usr/bin/app")
      .mmap2(10, 0x7f0000000000ULL, 0x2000, 0, "/usr/lib/libc.so.6", 8, 1, 1234)
      .sample(0x400010, 10, 10, 1000)
      .sample(0xffffffff81000100ULL, 10, 10, 1001, format::kCpuModeKernel);
  b.finished_round();
  if (!s.pipe) b.auxtrace(Bytes(24, 0x5a));
  b.comm(11, 11, "other").finished_round();
  return b;
}

std::vector<Shape> all_shapes() {
  std::vector<Shape> shapes;
  for (auto order : {std::endian::little, std::endian::big}) {
    for (bool pipe : {false, true}) {
      for (uint32_t c : {0U, 81U, 83U}) {
        std::string name = std::string(order == std::endian::big ? "Big" : "Little") +
                           (pipe ? "Pipe" : "File") +
                           (c == 0    ? ""
                            : c == 81 ? "Zstd"
                                      : "Zstd2");
        shapes.push_back({name, order, pipe, c});
      }
    }
  }
  return shapes;
}

using Read = testing::ReadBack;
absl::StatusOr<Read> read_all(const std::string& path) { return testing::read_back(path); }

class ShapeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(ShapeTest, ReaderSeesEveryRecordInOrder) {
  const Shape& s = GetParam();
  auto path = testing::write_temp(recording(s).build());
  auto got = read_all(path);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<uint32_t> expected;
  if (s.pipe) {
    // build_id, hostname, arch, and compressed when the data is.
    expected = {format::kHeaderAttr, format::kHeaderFeature, format::kHeaderFeature,
                format::kHeaderFeature};
    if (s.compressed != 0) expected.push_back(format::kHeaderFeature);
  }
  for (uint32_t t : {3, 1, 1, 10, 9, 9, 68}) expected.push_back(t);
  if (!s.pipe) expected.push_back(format::kAuxtrace);
  for (uint32_t t : {3, 68}) expected.push_back(t);
  EXPECT_EQ(got->types, expected);
  // The trailer of a COMM is TID, TIME and IDENTIFIER: 24 bytes, from the fixture's attr.
  size_t comm = std::find(got->types.begin(), got->types.end(), 3U) - got->types.begin();
  EXPECT_EQ(got->trailers[comm], 24U);
}

TEST_P(ShapeTest, CopyIsByteIdentical) {
  Bytes original = recording(GetParam()).build();
  auto in_path = testing::write_temp(original);
  auto in = io::open_input(in_path);
  ASSERT_TRUE(in.ok());
  const std::string out_path = in_path + ".out";
  ASSERT_TRUE(transform::run_pipeline(*in, out_path, {}, {}).ok());
  EXPECT_EQ(testing::read_file(out_path), original);
}

TEST_P(ShapeTest, GrowingRecordsKeepsTheFileConsistent) {
  const Shape& s = GetParam();
  auto in_path = testing::write_temp(recording(s).build());
  auto in = io::open_input(in_path);
  ASSERT_TRUE(in.ok());
  const std::string out_path = in_path + ".out";
  auto chain = transform::run_pipeline(*in, out_path, testing::chain_of(grow_mmaps()), {});
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ(testing::first_pass<testing::FakeBuildIdPass>(*chain).upgraded, 2);

  auto before = read_all(in_path);
  auto after = read_all(out_path);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->types.size(), before->types.size());
  for (size_t i = 0; i < before->types.size(); ++i) {
    if (before->types[i] == format::kMmap) {
      EXPECT_EQ(after->types[i], format::kMmap2);
      EXPECT_EQ(after->bytes[i].size(), before->bytes[i].size() + 32);
      // The sample_id trailer travels to the new end of the record.
      EXPECT_TRUE(std::equal(before->bytes[i].end() - 24, before->bytes[i].end(),
                             after->bytes[i].end() - 24));
    } else {
      EXPECT_EQ(after->bytes[i], before->bytes[i]) << "record " << i;
    }
  }
  if (s.pipe) return;

  // File mode: the features moved with the data and still read back; the AUXTRACE index points
  // at the AUXTRACE record's new place.
  Bytes out = testing::read_file(out_path);
  auto h = format::parse_file_header(out);
  ASSERT_TRUE(h.ok());
  auto table = format::parse_feature_table(out, *h);
  ASSERT_TRUE(table.ok()) << table.status();
  // build_id, hostname, arch, auxtrace, and compressed when the data is.
  ASSERT_EQ(table->size(), s.compressed != 0 ? 5U : 4U);
  for (const auto& f : *table) {
    format::FeatureBytes fb{std::span<const uint8_t>(out).subspan(f.section.offset, f.section.size),
                            h->endian, f.section.offset};
    if (f.id == format::kFeatHostname) {
      EXPECT_EQ(*format::decode_string_feature(fb), "fixture-host");
    }
    if (f.id == format::kFeatAuxtrace) {
      auto index = format::decode_auxtrace_index(fb);
      ASSERT_TRUE(index.ok());
      ASSERT_EQ(index->size(), 1U);
      const uint64_t at = (*index)[0].file_offset;
      ASSERT_LT(at + 8, out.size());
      EXPECT_EQ(h->endian.u32(out.data() + at), format::kAuxtrace);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllShapes, ShapeTest, ::testing::ValuesIn(all_shapes()),
                         [](const auto& info) { return info.param.name; });

uint64_t auxtrace_index_entry(const Bytes& file) {
  auto h = format::parse_file_header(file);
  auto table = format::parse_feature_table(file, *h);
  for (const auto& f : *table) {
    if (f.id == format::kFeatAuxtrace) {
      return (*format::decode_auxtrace_index(
          {std::span<const uint8_t>(file).subspan(f.section.offset, f.section.size), h->endian,
           0}))[0]
          .file_offset;
    }
  }
  return 0;
}

TEST(Reader, AuxtraceIndexMovesByExactlyTheGrowth) {
  PerfDataBuilder b;
  b.attr({}).mmap(1, 0x1000, 0x1000, 0, "/a").auxtrace(Bytes(40, 1));
  auto in_path = testing::write_temp(b.build());
  auto in = io::open_input(in_path);
  ASSERT_TRUE(
      transform::run_pipeline(*in, in_path + ".out", testing::chain_of(grow_mmaps()), {}).ok());
  EXPECT_EQ(auxtrace_index_entry(testing::read_file(in_path + ".out")),
            auxtrace_index_entry(testing::read_file(in_path)) + 32);
}

// A recording long enough that untouched runs are written straight from the mapping: 12,000
// samples of 40 bytes after one MMAP, and an AUXTRACE record at the end.
Bytes long_recording() {
  PerfDataBuilder b;
  b.attr({}).mmap(1, 0x400000, 0x1000, 0, "/a");
  for (uint64_t i = 0; i < 12000; ++i) b.sample(0x400010, 1, 1, i);
  b.auxtrace(Bytes(40, 1));
  return b.build();
}

TEST(Writer, LongRunsAfterAGrownRecordKeepTheirOffsetWithinAPage) {
  const Bytes original = long_recording();
  auto in_path = testing::write_temp(original);
  auto in = io::open_input(in_path);
  ASSERT_TRUE(
      transform::run_pipeline(*in, in_path + ".out", testing::chain_of(grow_mmaps()), {}).ok());
  const Bytes out = testing::read_file(in_path + ".out");

  // The MMAP grew by 32 bytes; page - 32 zero bytes before the data section make up for it.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  auto a = format::parse_file_header(original);
  auto b = format::parse_file_header(out);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->data.offset, a->data.offset + page - 32);
  EXPECT_EQ(b->data.size, a->data.size + 32);
  EXPECT_TRUE(std::all_of(out.begin() + static_cast<ptrdiff_t>(a->data.offset),
                          out.begin() + static_cast<ptrdiff_t>(b->data.offset),
                          [](uint8_t c) { return c == 0; }));
  EXPECT_EQ(auxtrace_index_entry(out), auxtrace_index_entry(original) + page);

  auto before = read_all(in_path);
  auto after = read_all(in_path + ".out");
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->types.size(), before->types.size());
  EXPECT_EQ(after->types[0], format::kMmap2);
  for (size_t i = 1; i < before->types.size(); ++i) {
    ASSERT_EQ(after->bytes[i], before->bytes[i]) << "record " << i;
  }
}

// An AUXTRACE record held back before the pad is decided moves with the pad, and the index says
// where it went: at the offset of an AUXTRACE record in the output.
TEST(Writer, AnAuxtraceRecordBeforeThePadMovesWithIt) {
  PerfDataBuilder b;
  b.attr({}).mmap(1, 0x400000, 0x1000, 0, "/a").auxtrace(Bytes(40, 1));
  for (uint64_t i = 0; i < 12000; ++i) b.sample(0x400010, 1, 1, i);
  const Bytes original = b.build();
  const Bytes out = grown(original);
  ASSERT_FALSE(out.empty());
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t at = auxtrace_index_entry(out);
  EXPECT_EQ(at, auxtrace_index_entry(original) + page);
  ASSERT_LT(at + 8, out.size());
  const auto e = format::parse_file_header(out)->endian;
  EXPECT_EQ(e.u32(out.data() + at), format::kAuxtrace);
}

TEST(Writer, LongRecordingThatNothingChangesIsByteIdentical) {
  const Bytes original = long_recording();
  auto in_path = testing::write_temp(original);
  auto in = io::open_input(in_path);
  ASSERT_TRUE(transform::run_pipeline(*in, in_path + ".out", {}, {}).ok());
  EXPECT_EQ(testing::read_file(in_path + ".out"), original);
}

// A process that reads recording after recording (follow) reads them all through one pool of
// chunk buffers: each is copied whole and as it is, not with what an earlier one left in them. The
// second is the first's size with other samples, so every chunk lies where one of the first's did.
TEST(Reader, RecordingsReadThroughOnePoolAreEachCopiedAsTheyAre) {
  const Bytes first = long_recording();
  PerfDataBuilder b;
  b.attr({}).mmap(1, 0x400000, 0x1000, 0, "/a");
  for (uint64_t i = 0; i < 12000; ++i) b.sample(0x400020, 2, 2, i);
  b.auxtrace(Bytes(40, 2));
  const Bytes second = b.build();
  ASSERT_EQ(first.size(), second.size());
  ASSERT_NE(first, second);
  io::ChunkPool pool;
  for (const Bytes& original : {first, second, first}) {
    const std::string in_path = testing::write_temp(original);
    auto in = io::open_input(in_path, &pool);
    ASSERT_TRUE(in.ok()) << in.status();
    ASSERT_TRUE(transform::run_pipeline(*in, in_path + ".out", {}, {}).ok());
    EXPECT_EQ(testing::read_file(in_path + ".out"), original);
  }
}

// A saved stream (mapped, read from byte 16) whose records are framed across the reader's chunks
// (io::MappedFile::chunk_at): an unaligned record of a type pdfix does not know puts the next
// SAMPLE's header across the first chunk's end, 3 bytes before it and 5 after.
Bytes straddling_recording(size_t& samples) {
  constexpr uint64_t kBoundary = io::MappedFile::kChunkSize;
  constexpr uint32_t kUnknownType = 95;
  const Bytes marker = {0xde, 0xad, 0xbe, 0xef, 0xfe, 0xed, 0xfa, 0xce};
  auto build = [&](size_t before, size_t body) {
    PerfDataBuilder b;
    b.pipe_mode().attr({}).comm(1, 1, "x");
    for (size_t i = 0; i < before; ++i) b.sample(0x400010, 1, 1, i);
    Bytes raw = marker;
    raw.resize(std::max(body, marker.size()), 0x5a);
    b.raw_record(kUnknownType, 0, raw);
    for (size_t i = 0; i < 3000; ++i) b.sample(0x400020, 1, 1, i);
    return b.build();
  };
  const Bytes probe = build(1, 0);
  const Bytes one_more = build(2, 0);
  const size_t sample_size = one_more.size() - probe.size();
  const size_t before = (kBoundary - 4096) / sample_size;
  const Bytes draft = build(before, 0);
  const size_t at =
      std::search(draft.begin(), draft.end(), marker.begin(), marker.end()) - draft.begin() - 8;
  // The unknown record ends 3 bytes short of the boundary: its size is 5 mod 8, so the builder's
  // padding to 8 (3 bytes) comes out again.
  const size_t size = kBoundary - 3 - at;
  Bytes file = build(before, size - 8);
  const size_t padded = (size + 7) / 8 * 8;
  file.erase(file.begin() + static_cast<ptrdiff_t>(at + size),
             file.begin() + static_cast<ptrdiff_t>(at + padded));
  file[at + 6] = static_cast<uint8_t>(size);
  file[at + 7] = static_cast<uint8_t>(size >> 8);
  samples = before + 3000;
  return file;
}

TEST(Reader, AHeaderAcrossTwoChunksIsFramed) {
  size_t samples = 0;
  const Bytes original = straddling_recording(samples);
  ASSERT_GT(original.size(), io::MappedFile::kChunkSize + 65536);
  const auto path = testing::write_temp(original);
  // Every record, read one by one: the samples the recording was built with, and the unknown one.
  auto read = testing::read_back(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(static_cast<size_t>(std::count(read->types.begin(), read->types.end(),
                                           static_cast<uint32_t>(format::kSample))),
            samples);
  EXPECT_EQ(std::count(read->types.begin(), read->types.end(), 95U), 1);
  // Skipped in runs and written from the chunks: the same bytes.
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(transform::run_pipeline(*in, path + ".copy", {}, {}).ok());
  EXPECT_EQ(testing::read_file(path + ".copy"), original);
}

TEST(Reader, FinishedRoundsAreSkippedWithTheRecordsAroundThem) {
  // perf ends every round with an 8-byte FINISHED_ROUND: a reader that stopped at each would
  // touch the bytes of a few hundred records no pass wants, in every recording.
  PerfDataBuilder b;
  b.attr({});
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 10; ++i) b.raw_record(format::kSample, 0, Bytes(64, 0));
    b.raw_record(format::kFinishedRound, 0, {});
  }
  const auto path = testing::write_temp(b.build());
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  auto session = transform::open_session(*in);
  ASSERT_TRUE(session.ok()) << session.status();
  auto reader = transform::make_reader(*in, *session, {});
  const transform::RecordReader::Span span = reader->skip_unwanted({});
  EXPECT_EQ(span.offset, session->header().data.offset);
  EXPECT_EQ(span.size, session->header().data.size);
  auto next = reader->next();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  // A pass that wants them still gets each one.
  auto again = transform::make_reader(*in, *session, {});
  std::bitset<128> rounds;
  rounds[format::kFinishedRound] = true;
  EXPECT_EQ(again->skip_unwanted(rounds).size, 10 * (8 + 64U));
  auto round = again->next();
  ASSERT_TRUE(round.ok() && round->has_value());
  EXPECT_EQ((*round)->header.type, format::kFinishedRound);
}

TEST(Reader, ASkipStopsAfterAChunksWorth) {
  // So that the writer hands on what was skipped while it is still in the reader's chunks: a
  // skip that ran to the end of the data would have every chunk read twice.
  PerfDataBuilder b;
  b.attr({});
  for (int i = 0; i < 8000; ++i) b.raw_record(format::kSample, 0, Bytes(64, 0));
  const auto path = testing::write_temp(b.build());
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  auto session = transform::open_session(*in);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_GT(session->header().data.size, 2 * io::MappedFile::kChunkSize);
  auto reader = transform::make_reader(*in, *session, {});
  uint64_t skipped = 0;
  while (true) {
    const transform::RecordReader::Span span = reader->skip_unwanted({});
    EXPECT_LE(span.size, io::MappedFile::kChunkSize + 72);
    skipped += span.size;
    auto next = reader->next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    skipped += (*next)->bytes.size();
  }
  EXPECT_EQ(skipped, session->header().data.size);
}

TEST(Reader, ZeroSizeRecordIsRefusedWithItsOffset) {
  PerfDataBuilder b;
  b.attr({}).comm(1, 1, "x").raw_record(9, 0, Bytes(8, 0));
  Bytes file = b.build();
  auto h = format::parse_file_header(file);
  // Zero the size of the second record.
  const uint64_t second = h->data.offset + h->endian.u16(file.data() + h->data.offset + 6);
  h->endian.put_u16(file.data() + second + 6, 0);
  auto got = read_all(testing::write_temp(file));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(absl::StrCat("offset 0x", absl::Hex(second))),
            std::string::npos)
      << got.status();
  EXPECT_NE(got.status().message().find("SAMPLE"), std::string::npos) << got.status();
}

TEST(Reader, TruncatedPipeStreamIsRefused) {
  Bytes file = recording({"", std::endian::little, true, 0}).build();
  file.resize(file.size() - 12);
  auto got = read_all(testing::write_temp(file));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("runs past the end"), std::string::npos) << got.status();
}

TEST(Reader, TrailingTextAfterAPipeStreamIsKept) {
  const std::string junk = "[ perf record: Woken up 1 times to write data ]\n";
  Bytes original = recording({"", std::endian::little, true, 0}).trailing(junk).build();
  auto path = testing::write_temp(original);
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  auto session = transform::open_session(*in);
  auto reader = transform::make_reader(*in, *session, {});
  std::optional<transform::RecordRef> last;
  while (true) {
    auto r = reader->next();
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->has_value()) break;
    last = **r;
  }
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->trailing);
  EXPECT_EQ(std::string(last->bytes.begin(), last->bytes.end()), junk);

  auto in2 = io::open_input(path);
  ASSERT_TRUE(transform::run_pipeline(*in2, path + ".out", {}, {}).ok());
  EXPECT_EQ(testing::read_file(path + ".out"), original);
}

TEST(Reader, CompressedStreamCutInsideARecordIsRefused) {
  // Drop the last compressed record: the records it completed are now cut off.
  PerfDataBuilder b;
  b.attr({})
      .compress(81, 60)
      .comm(1, 1, "aaaaaaaaaaaaaaaaaaaaaaa")
      .comm(2, 2, "bbbbbbbbbbbbbbbbbbbbbbbbbb");
  Bytes file = b.build();
  auto h = format::parse_file_header(file);
  uint64_t pos = h->data.offset, last = pos;
  while (pos < h->data.end()) {
    last = pos;
    pos += h->endian.u16(file.data() + pos + 6);
  }
  h->endian.put_u64(file.data() + 48, last - h->data.offset);
  std::fill_n(file.begin() + 72, 32, 0);  // the feature table no longer follows the data
  auto got = read_all(testing::write_temp(file));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("compressed data ends inside a record"), std::string::npos)
      << got.status();
}

TEST(Reader, SynthesizedRecordsUseTheFirstEventsTrailer) {
  // Two events whose sample_types differ outside the trailer fields (as with Intel PT and a
  // dummy event), and a kernel map with the zero trailer perf gives synthesized records.
  PerfDataBuilder b;
  b.attr({.sample_type = 0x10087, .ids = {1}}).attr({.sample_type = 0x10085 | 0x2, .ids = {2}});
  b.mmap(-1, 0xffffffff81000000ULL, 0x1000000, 0xffffffff81000000ULL, "[kernel.kallsyms]_text", 1);
  auto got = read_all(testing::write_temp(b.build()));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->types.size(), 1U);
  EXPECT_EQ(got->trailers[0], 32U);  // TID, TIME, CPU, IDENTIFIER
}

TEST(Writer, FailedRunLeavesNoOutput) {
  Bytes file = recording({"", std::endian::little, false, 0}).build();
  auto h = format::parse_file_header(file);
  h->endian.put_u16(file.data() + h->data.offset + 6, 4);  // first record: size below 8
  auto path = testing::write_temp(file);
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok());
  EXPECT_FALSE(transform::run_pipeline(*in, path + ".out", {}, {}).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".out"));
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    EXPECT_EQ(entry.path().filename(), "fixture.data") << "left behind: " << entry.path();
  }
}

}  // namespace
}  // namespace pdfix
