#include "transform/zstd_stream.h"

#include <zstd.h>

#include "absl/strings/str_cat.h"

namespace pdfix::transform {
namespace {

// Decompressed bytes one compressed record may expand to before we call it a zstd bomb. perf
// compresses at most a 64 KiB record's worth of zstd per record (a ring-buffer chunk), far below
// this; the bound keeps a crafted record from costing more memory than pdfix's own working set.
constexpr size_t kMaxExpansion = size_t{32} << 20;

}  // namespace

ZstdDecoder::ZstdDecoder() : ctx_(ZSTD_createDCtx()) {}
ZstdDecoder::~ZstdDecoder() { ZSTD_freeDCtx(ctx_); }

absl::Status ZstdDecoder::decode(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  const size_t start = out.size();
  while (true) {
    const size_t room = ZSTD_DStreamOutSize();
    const size_t old = out.size();
    out.resize(old + room);
    ZSTD_outBuffer dst{out.data() + old, room, 0};
    size_t r = ZSTD_decompressStream(ctx_, &dst, &src);
    out.resize(old + dst.pos);
    if (ZSTD_isError(r)) {
      return absl::DataLossError(absl::StrCat("zstd: ", ZSTD_getErrorName(r)));
    }
    if (out.size() - start > kMaxExpansion) {
      return absl::ResourceExhaustedError(
          absl::StrCat("zstd data expands beyond ", kMaxExpansion >> 20, " MiB in one record"));
    }
    // Done when all input is consumed and the last call did not fill the output buffer.
    if (src.pos == src.size && dst.pos < room) return absl::OkStatus();
  }
}

ZstdEncoder::ZstdEncoder(int level) : ctx_(ZSTD_createCCtx()) {
  ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, level);
}
ZstdEncoder::~ZstdEncoder() { ZSTD_freeCCtx(ctx_); }

absl::Status ZstdEncoder::encode_flush(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  while (true) {
    const size_t old = out.size();
    const size_t room = ZSTD_compressBound(in.size()) + ZSTD_CStreamOutSize();
    out.resize(old + room);
    ZSTD_outBuffer dst{out.data() + old, room, 0};
    size_t left = ZSTD_compressStream2(ctx_, &dst, &src, ZSTD_e_flush);
    out.resize(old + dst.pos);
    if (ZSTD_isError(left)) {
      return absl::InternalError(absl::StrCat("zstd: ", ZSTD_getErrorName(left)));
    }
    if (left == 0) return absl::OkStatus();
  }
}

}  // namespace pdfix::transform
