// The headers older and newer perfs write: the legacy 72-byte "PERFFILE" header, and every
// perf_event_attr size from the first ABI (64 bytes) to perf 6.1's 136, in both byte orders,
// files and streams. Each is written back as it came, whether or not records change.
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

using testing::Bytes;
using testing::grown;
using testing::PerfDataBuilder;

struct HeaderVariant {
  std::string name;
  std::endian order;
  bool pipe;
  bool legacy;
  uint32_t attr_size;
};

std::vector<HeaderVariant> header_variants() {
  std::vector<HeaderVariant> out;
  for (auto order : {std::endian::little, std::endian::big}) {
    const std::string o = order == std::endian::big ? "Big" : "Little";
    out.push_back({o + "Legacy", order, false, true, 96});
    for (bool pipe : {false, true}) {
      for (uint32_t size = 64; size <= 136; size += 8) {
        out.push_back({o + (pipe ? "Pipe" : "File") + "Attr" + std::to_string(size), order, pipe,
                       false, size});
      }
    }
  }
  return out;
}

class HeaderVariantTest : public ::testing::TestWithParam<HeaderVariant> {
 protected:
  Bytes recording() const {
    const HeaderVariant& v = GetParam();
    PerfDataBuilder b(v.order);
    if (v.pipe) b.pipe_mode();
    if (v.legacy) b.legacy_header();
    b.attr({.sample_type = 0x107 | (1ULL << 16), .size = v.attr_size, .ids = {7}});
    if (!v.legacy) b.string_feature(format::kFeatHostname, "fixture-host");
    b.comm(10, 10, "app")
        .mmap(10, 0x400000, 0x1000, 0, "/usr/bin/app")
        .sample(0x400010, 10, 10, 1000)
        .finished_round();
    return b.build();
  }
};

// A u64 of the file as its byte order has it, read without pdfix's parser.
uint64_t raw_u64(const Bytes& file, size_t at, std::endian order) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) {
    const size_t byte = order == std::endian::little ? 7 - i : i;
    v = (v << 8) | file.at(at + byte);
  }
  return v;
}

TEST_P(HeaderVariantTest, IsWrittenBackAsItCame) {
  const HeaderVariant& v = GetParam();
  const Bytes original = recording();
  // The fixture is what the variant says, byte for byte where perf puts it.
  ASSERT_EQ(std::string(original.begin(), original.begin() + 8) == "PERFFILE", v.legacy);
  if (!v.pipe) {
    ASSERT_EQ(raw_u64(original, 8, v.order), v.legacy ? 72U : 104U);  // header size
    ASSERT_EQ(raw_u64(original, 16, v.order), v.attr_size + 16U);     // attr + its id section
  }
  auto in_path = testing::write_temp(original);
  auto in = io::open_input(in_path);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(transform::run_pipeline(*in, in_path + ".copy", {}, {}).ok());
  EXPECT_EQ(testing::read_file(in_path + ".copy"), original);

  // Records grow: the header keeps its magic, its size and the attr size, and the attr itself.
  const Bytes out = grown(original);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(std::string(out.begin(), out.begin() + 8),
            std::string(original.begin(), original.begin() + 8));
  if (!v.pipe) {
    EXPECT_EQ(raw_u64(out, 8, v.order), raw_u64(original, 8, v.order));
    EXPECT_EQ(raw_u64(out, 16, v.order), raw_u64(original, 16, v.order));
    // The attrs section (offset, size at 24) is where it was, with the same bytes.
    const uint64_t at = raw_u64(original, 24, v.order);
    const uint64_t size = raw_u64(original, 32, v.order);
    ASSERT_EQ(size, v.attr_size + 16U);
    EXPECT_EQ(raw_u64(out, 24, v.order), at);
    EXPECT_TRUE(std::equal(original.begin() + static_cast<ptrdiff_t>(at),
                           original.begin() + static_cast<ptrdiff_t>(at + size),
                           out.begin() + static_cast<ptrdiff_t>(at)));
  } else {
    // A stream's attr is its first record after the 16-byte header: kept whole.
    const uint32_t attr_record = v.order == std::endian::little
                                     ? original[22] | (original[23] << 8)
                                     : (original[22] << 8) | original[23];
    EXPECT_EQ(attr_record, 8 + v.attr_size + 8U);
    EXPECT_TRUE(
        std::equal(original.begin() + 16, original.begin() + 16 + attr_record, out.begin() + 16));
  }
  auto before = testing::read_back(in_path);
  ASSERT_TRUE(before.ok()) << before.status();
  auto grown_path = testing::write_temp(out, "grown.data");
  auto read_grown = testing::read_back(grown_path);
  ASSERT_TRUE(read_grown.ok()) << read_grown.status();
  ASSERT_EQ(read_grown->types.size(), before->types.size());
  for (size_t i = 0; i < before->types.size(); ++i) {
    if (before->types[i] == format::kMmap) {
      EXPECT_EQ(read_grown->types[i], format::kMmap2);
      // The sample_id trailer (tid, time, id: 24 bytes) travels to the new end.
      EXPECT_TRUE(std::equal(before->bytes[i].end() - 24, before->bytes[i].end(),
                             read_grown->bytes[i].end() - 24));
    } else {
      EXPECT_EQ(read_grown->bytes[i], before->bytes[i]) << "record " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Every, HeaderVariantTest, ::testing::ValuesIn(header_variants()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace pdfix
