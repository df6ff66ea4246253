// `pdfix compat --for 6.1` read back by the machine's perf 6.1: the perf 6.16 recordings of the
// foreign corpus (attrs of 136 bytes, COMPRESSED, COMPRESSED2 in a stream), a `perf record -z`
// stream of this machine (zstd in a stream, which perf 6.1 cannot read), and fixture recordings
// of what perf 7.x writes.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::e2e {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

const std::string kForeign = foreign_corpus_dir() + "/linux-perf-data/";

// The records perf counts that compat must carry over, every one.
void expect_counts_carried(const std::map<std::string, uint64_t>& input,
                           const std::map<std::string, uint64_t>& perf) {
  for (const char* type : {"SAMPLE", "MMAP", "MMAP2", "COMM", "FORK", "EXIT"}) {
    const auto in = input.find(type);
    const auto out = perf.find(type);
    EXPECT_EQ(in == input.end() ? 0 : in->second, out == perf.end() ? 0 : out->second) << type;
  }
}

// The DSOs perf 6.1 gives samples to in `out`, which must be those pdfix finds hit in `in`: the
// oracle is pdfix's own attribution (buildid-list --hits, which follows perf's rules) over the
// input that perf 6.1 cannot read.
void expect_same_dsos(const std::string& in, const std::string& out) {
  RunResult report =
      sh("perf report -i " + quote(out) + " --stdio --sort dso -F dso 2>/dev/null | grep -v '^#'");
  ASSERT_EQ(report.status, 0) << report.err;
  std::set<std::string> perf;
  for (absl::string_view line : absl::StrSplit(report.out, '\n', absl::SkipWhitespace())) {
    const std::string dso(absl::StripAsciiWhitespace(line));
    if (dso != "[unknown]") perf.insert(dso.substr(dso.rfind('/') + 1));
  }
  RunResult hits = sh(pdfix() + " buildid-list --hits " + quote(in));
  ASSERT_EQ(hits.status, 0) << hits.err;
  std::set<std::string> pdfix_dsos;
  for (absl::string_view line : absl::StrSplit(hits.out, '\n', absl::SkipWhitespace())) {
    const std::string name(absl::StripAsciiWhitespace(line.substr(line.find(' ') + 1)));
    pdfix_dsos.insert(name.substr(name.rfind('/') + 1));
  }
  EXPECT_FALSE(perf.empty());
  EXPECT_EQ(perf, pdfix_dsos);
}

class ForeignCompat : public ::testing::TestWithParam<std::string> {};

TEST_P(ForeignCompat, Perf61ReadsWhatCompatWrote) {
  const std::string in = kForeign + GetParam();
  ASSERT_TRUE(perf_stats(in).empty()) << "perf 6.1 reads " << in << " already";
  const std::string out = temp_dir() + "/compat.data";
  RunResult r = sh(pdfix() + " compat --for 6.1 " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("shrunk from 136 to 128"), std::string::npos) << r.err;
  const auto perf = perf_stats(out);
  ASSERT_FALSE(perf.empty()) << sh("perf report --stats -i " + quote(out)).err;
  expect_counts_carried(pdfix_counts(in), perf);
  expect_same_dsos(in, out);
}

INSTANTIATE_TEST_SUITE_P(LinuxPerfData, ForeignCompat,
                         ::testing::Values("sleep.data", "sleep.compressed.data",
                                           "sleep.compressed2.pipe.data"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(Compat, Perf61ReadsItsOwnZstdStreamAfterCompat) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string dir = temp_dir();
  RunResult rec =
      sh("perf record -q -z -e cpu-clock -o - -- ls / 2>/dev/null > " + quote(dir + "/z.pipe"));
  ASSERT_EQ(rec.status, 0) << rec.err;
  const auto input = pdfix_counts(dir + "/z.pipe");
  ASSERT_GT(input.count("COMPRESSED"), 0U) << "perf record -z wrote no COMPRESSED record";
  ASSERT_TRUE(perf_stats(dir + "/z.pipe").empty()) << "perf 6.1 reads its zstd stream now";
  RunResult r = sh(pdfix() + " compat --for 6.1 - - < " + quote(dir + "/z.pipe") + " > " +
                   quote(dir + "/out.pipe"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("written as plain"), std::string::npos) << r.err;
  const auto perf = perf_stats(dir + "/out.pipe");
  ASSERT_FALSE(perf.empty());
  expect_counts_carried(input, perf);
}

constexpr uint64_t kKernelContext = static_cast<uint64_t>(-128);

Bytes u64s(const format::Endian& e, std::vector<uint64_t> v) {
  Bytes b(8 * v.size());
  for (size_t i = 0; i < v.size(); ++i) e.put_u64(b.data() + 8 * i, v[i]);
  return b;
}

// What perf 7.x writes: 144-byte attrs, deferred callchains, types 84-86, features 32-34.
Bytes newest(std::endian order, bool pipe) {
  PerfDataBuilder b(order);
  if (pipe) b.pipe_mode();
  const format::Endian& e = b.endian();
  b.attr({.sample_type = 0x127, .size = 144, .ids = {7}, .flags = uint64_t{1} << 38});
  b.string_feature(3, "newest-host");
  b.feature(32, u64s(e, {1, 2})).feature(33, u64s(e, {62})).feature(34, u64s(e, {64}));
  if (pipe) b.raw_record(format::kHeaderFeature, 0, u64s(e, {35}));
  b.comm(10, 10, "app")
      .mmap2(10, 0x400000, 0x1000, 0, "/usr/bin/app", 8, 1, 77)
      .raw_record(84, 0, u64s(e, {1}))
      .raw_record(85, 0, u64s(e, {2}))
      .raw_record(86, 0, u64s(e, {3}));
  for (uint64_t i = 0; i < 3; ++i) {
    b.sample_callchain(
         0xffffffff81000010ULL, 10, 10, 1000 + 10 * i,
         {kKernelContext, 0xffffffff81000010ULL, format::kContextUserDeferred, 0xc00c1e + i},
         format::kCpuModeKernel)
        .finished_round()
        .callchain_deferred(10, 10, 1005 + 10 * i, 0xc00c1e + i,
                            {format::kContextUser, 0x400abc, 0x400def});
  }
  b.finished_round();
  return b.build();
}

class NewestFixture : public ::testing::TestWithParam<std::tuple<std::endian, bool>> {};

TEST_P(NewestFixture, Perf61ReadsItWithCallchainsStitched) {
  const auto [order, pipe] = GetParam();
  const std::string in = testing::write_temp(newest(order, pipe), "newest.data");
  ASSERT_TRUE(perf_stats(in).empty()) << "perf 6.1 reads a 144-byte attr";
  const std::string out = temp_dir() + "/compat.data";
  RunResult r = sh(pdfix() + " compat --for 6.1 " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("3 deferred user callchain(s) stitched"), std::string::npos) << r.err;
  const auto perf = perf_stats(out);
  ASSERT_FALSE(perf.empty()) << sh("perf report --stats -i " + quote(out)).err;
  EXPECT_EQ(perf.at("SAMPLE"), 3U);
  EXPECT_EQ(perf.at("MMAP2"), 1U);
  EXPECT_EQ(perf.at("COMM"), 1U);
  // Each sample's callchain: the kernel frame, then the user frames the deferred record held.
  RunResult script = sh("perf script -F ip -i " + quote(out) + " 2>&1");
  ASSERT_EQ(script.status, 0) << script.out;
  size_t samples = 0;
  for (size_t at = 0; (at = script.out.find("ffffffff81000010", at)) != std::string::npos; ++at) {
    ++samples;
  }
  EXPECT_EQ(samples, 3U) << script.out;
  // perf prints a user frame as an address, or map-relative once it has resolved the map.
  for (const char* user : {"abc", "def"}) {
    size_t n = 0;
    for (size_t at = 0; (at = script.out.find(user, at)) != std::string::npos; ++at) ++n;
    EXPECT_EQ(n, 3U) << user << "\n" << script.out;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NewestFixture,
    ::testing::Combine(::testing::Values(std::endian::little, std::endian::big), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == std::endian::big ? "Big" : "Little") +
             (std::get<1>(info.param) ? "Pipe" : "File");
    });

TEST(Compat, IdsOnlyInMmap2ReachTheTableForPerf510) {
  PerfDataBuilder b;
  b.attr({});
  b.string_feature(3, "host");
  b.mmap2_build_id(-1, 0xffffffff81000000ULL, 0x1000000, 0xffffffff81000000ULL,
                   "[kernel.kallsyms]_text", Bytes(20, 0x11), format::kCpuModeKernel)
      .mmap2_build_id(10, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0x22))
      .sample(0x400010, 10, 10, 1000);
  const std::string in = testing::write_temp(b.build(), "ids-in-maps.data");
  RunResult before = sh("perf buildid-list -i " + quote(in));
  EXPECT_EQ(before.out.find("2222"), std::string::npos) << "the input has a table";
  const std::string out = temp_dir() + "/compat.data";
  RunResult r = sh(pdfix() + " compat --for 5.10 " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  RunResult list = sh("perf buildid-list -i " + quote(out));
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find(std::string(40, '1') + " [kernel.kallsyms]"), std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find(std::string(40, '2') + " /usr/bin/app"), std::string::npos) << list.out;
  // No map record carries an id any more: a perf before 5.12 would misread one.
  RunResult maps = sh("perf script --show-mmap-events -F comm -i " + quote(out) + " 2>&1");
  EXPECT_EQ(maps.out.find(std::string(40, '2')), std::string::npos) << maps.out;
}

TEST(Compat, WithoutForTheVerbRefusesAndFixChangesNothing) {
  const std::string in = kForeign + "sleep.data";
  RunResult r = sh(pdfix() + " compat " + quote(in) + " " + quote(temp_dir() + "/o.data"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--for"), std::string::npos) << r.err;
  RunResult bad = sh(pdfix() + " compat --for 2.6 " + quote(in) + " " + quote(temp_dir() + "/o"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("MMAP2"), std::string::npos) << bad.err;
}

TEST(Compat, FixForTakesTheSameOption) {
  const std::string in = kForeign + "sleep.data";
  const std::string out = temp_dir() + "/fixed.data";
  RunResult r = sh(pdfix() + " fix --for 6.1 --json " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"compat\""), std::string::npos) << r.out;
  EXPECT_FALSE(perf_stats(out).empty());
}

}  // namespace
}  // namespace pdfix::e2e
