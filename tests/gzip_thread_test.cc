// gzip beside the encoding (profile/gzip_thread.h): what is written, in the order written, is one
// gzip stream that a reader inflates back to it whole.
#include "profile/gzip_thread.h"

#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace pdfix::profile {
namespace {

std::string inflated(const std::string& gz) {
  google::protobuf::io::ArrayInputStream in(gz.data(), static_cast<int>(gz.size()));
  google::protobuf::io::GzipInputStream unzip(&in, google::protobuf::io::GzipInputStream::GZIP);
  std::string out;
  const void* data = nullptr;
  int size = 0;
  while (unzip.Next(&data, &size)) out.append(static_cast<const char*>(data), size);
  EXPECT_EQ(unzip.ZlibErrorCode(), 1) << "Z_STREAM_END: the stream was closed";
  return out;
}

TEST(GzipThread, WhatIsWrittenIsOneStreamInTheOrderWritten) {
  // Blocks of every size around the compressor's buffer, an empty one among them, and one of
  // random bytes that do not compress.
  std::mt19937_64 random(7);
  std::string all;
  GzipThread gz;
  for (const size_t size : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{300000}}) {
    std::string block;
    for (size_t i = 0; i < size; ++i) block.push_back(static_cast<char>('a' + i % 23));
    all += block;
    gz.write(block);
  }
  std::string noise(1 << 20, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  all += noise;
  gz.write(noise);
  const std::string out = gz.finish();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(static_cast<uint8_t>(out[0]), 0x1f);  // gzip's magic
  EXPECT_EQ(static_cast<uint8_t>(out[1]), 0x8b);
  EXPECT_EQ(inflated(out), all);
}

TEST(GzipThread, NothingWrittenIsAnEmptyStream) {
  GzipThread gz;
  const std::string out = gz.finish();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(inflated(out), "");
}

}  // namespace
}  // namespace pdfix::profile
