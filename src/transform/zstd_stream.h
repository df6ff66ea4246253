// perf's compressed data is one zstd stream running through every COMPRESSED record of a file,
// flushed (never ended) at each record. These wrap libzstd for that use.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"

struct ZSTD_DCtx_s;
struct ZSTD_CCtx_s;

namespace pdfix::transform {

class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;
  // Decompresses one record's worth of the stream and appends the output to `out`.
  absl::Status decode(std::span<const uint8_t> in, std::vector<uint8_t>& out);

 private:
  ZSTD_DCtx_s* ctx_;
};

class ZstdEncoder {
 public:
  explicit ZstdEncoder(int level);
  ~ZstdEncoder();
  ZstdEncoder(const ZstdEncoder&) = delete;
  ZstdEncoder& operator=(const ZstdEncoder&) = delete;
  // Compresses `in` and flushes, so that the output decodes fully given what came before it.
  absl::Status encode_flush(std::span<const uint8_t> in, std::vector<uint8_t>& out);

 private:
  ZSTD_CCtx_s* ctx_;
};

}  // namespace pdfix::transform
