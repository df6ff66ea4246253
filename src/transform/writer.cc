#include "transform/writer.h"

#include <unistd.h>

#include <algorithm>

#include "format/error.h"
#include "format/record_type.h"

namespace pdfix::transform {
namespace {

// Input bytes per re-compressed record: the compressed output must fit a record's u16 size.
constexpr size_t kCompressChunk = size_t{32} * 1024;
// An untouched run is handed to the output a chunk at a time, as the reader read it
// (io::MappedFile::chunk_at), so that the writing of it overlaps the reading of what follows while
// the chunk is still in the cache.
constexpr uint64_t kRunChunk = io::MappedFile::kChunkSize;
// A run at least this long decides the pad before the data section (see flush_run); the first
// one may end at the first chunk's end, a little short of a whole chunk.
constexpr uint64_t kLongRun = uint64_t{64} << 10;
// Where the output shares blocks with the input nothing is copied, and each clone costs a
// filesystem transaction: runs go in long pieces.
constexpr uint64_t kCloneChunk = uint64_t{64} << 20;
// Data-section bytes held back while the alignment pad is undecided, at most: a recording whose
// head is rewritten this far gets no pad.
constexpr size_t kMaxHeld = size_t{1} << 20;

}  // namespace

Writer::Writer(io::Output& out, const Session& session, const io::MappedFile* mapped,
               Compression compression, std::vector<const io::MappedFile*> parts, Layout layout)
    : out_(out),
      session_(session),
      mapped_(mapped),
      compression_(compression),
      parts_(std::move(parts)),
      layout_(layout),
      page_size_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) {}

absl::Status Writer::begin() {
  if (layout_ == Layout::kBareRecords) return absl::OkStatus();
  const format::FileHeader& h = session_.header();
  const uint64_t prefix = h.pipe ? format::kPipeHeaderSize : h.data.offset;
  if (mapped_ != nullptr) {
    if (auto s = out_.write_mapped(mapped_->bytes().first(prefix), {mapped_->fd(), 0}); !s.ok()) {
      return s;
    }
  } else {
    // Only a pipe arrives unmapped; its header is the 16-byte pipe header.
    if (auto s = out_.write(format::encode_pipe_header(h.endian)); !s.ok()) return s;
  }
  pos_ = prefix;
  aligning_ = mapped_ != nullptr && !h.pipe;
  return absl::OkStatus();
}

absl::Status Writer::put(std::span<const uint8_t> bytes) {
  if (!aligning_) return out_.write(bytes);
  held_.insert(held_.end(), bytes.begin(), bytes.end());
  return held_.size() >= kMaxHeld ? settle_pad(0) : absl::OkStatus();
}

absl::Status Writer::settle_pad(uint64_t pad) {
  aligning_ = false;
  data_pad_ = pad;
  pos_ += pad;
  for (auto& [from, to] : auxtrace_moves_) to += pad;
  if (auto s = out_.write(std::vector<uint8_t>(pad)); !s.ok()) return s;
  auto s = out_.write(held_);
  held_ = {};
  return s;
}

absl::Status Writer::flush_run(uint64_t len) {
  len = std::min(len, run_len_);
  if (len == 0) return absl::OkStatus();
  const io::MappedFile& from = run_part_ == 0 ? *mapped_ : *parts_[run_part_ - 1];
  const uint64_t begin = run_begin_;
  const uint64_t out_begin = pos_ - run_len_;
  run_begin_ += len;
  run_len_ -= len;
  if (aligning_ && len >= kLongRun) {
    // The kernel copies a run into the page cache much faster when it sits at the same offset
    // within a page in both files, and records that grew before it (MMAP upgraded to MMAP2)
    // moved it. Padding before the data section moves it back. The pad is decided here, at the
    // first long run, because only now is the growth before it known.
    if (auto s = settle_pad((begin - out_begin) & (page_size_ - 1)); !s.ok()) return s;
  }
  return send(from, begin, len);
}

absl::Status Writer::send(const io::MappedFile& from, uint64_t begin, uint64_t len) {
  if (!aligning_ && out_.sharing_blocks()) {
    return out_.write_mapped(from.bytes().subspan(begin, len), {from.fd(), begin});
  }
  while (len > 0) {
    std::shared_ptr<const io::Chunk> chunk = from.chunk_at(begin);
    if (!chunk) return put(from.bytes().subspan(begin, len));
    const std::span<const uint8_t> piece = chunk->from(begin, len);
    auto s = aligning_ ? put(piece) : out_.write_mapped(piece, {from.fd(), begin}, chunk);
    if (!s.ok()) return s;
    begin += piece.size();
    len -= piece.size();
  }
  return absl::OkStatus();
}

absl::Status Writer::write_bytes(std::span<const uint8_t> bytes) {
  if (auto s = flush_run(); !s.ok()) return s;
  pos_ += bytes.size();
  return put(bytes);
}

absl::Status Writer::write_original(const RecordRef& r) {
  if (mapped_ == nullptr) return write_bytes(r.bytes);
  return emit_untouched(r.offset, r.bytes.size(), r.part);
}

absl::Status Writer::emit_untouched(uint64_t offset, uint64_t size, uint32_t part) {
  pos_ += size;
  if (run_len_ > 0 && run_part_ == part && run_begin_ + run_len_ == offset) {
    run_len_ += size;
  } else {
    if (auto s = flush_run(); !s.ok()) return s;
    run_begin_ = offset;
    run_len_ = size;
    run_part_ = part;
  }
  if (out_.sharing_blocks()) return run_len_ >= kCloneChunk ? flush_run() : absl::OkStatus();
  // What reaches past a chunk's end goes out up to there: whole chunks, each in one piece.
  const uint64_t whole = (run_begin_ + run_len_) / kRunChunk * kRunChunk;
  return whole > run_begin_ ? flush_run(whole - run_begin_) : absl::OkStatus();
}

absl::Status Writer::flush_compressed(bool all) {
  const format::Endian& e = session_.endian();
  size_t done = 0;
  while (to_compress_.size() - done >= kCompressChunk || (all && done < to_compress_.size())) {
    const size_t n = std::min(kCompressChunk, to_compress_.size() - done);
    if (!zstd_) zstd_.emplace(zstd_level_);
    scratch_.assign(format::compressed_header_size(compressed_type_), 0);
    if (auto s = zstd_->encode_flush(std::span(to_compress_).subspan(done, n), scratch_); !s.ok()) {
      return s;
    }
    if (auto s = format::finish_compressed_record(scratch_, compressed_type_, e); !s.ok()) {
      return s;
    }
    if (auto s = write_bytes(scratch_); !s.ok()) return s;
    done += n;
  }
  to_compress_.erase(to_compress_.begin(), to_compress_.begin() + static_cast<ptrdiff_t>(done));
  return absl::OkStatus();
}

absl::Status Writer::emit(const RecordRef& r) {
  const bool container = !r.inner && format::is_compressed_type(r.header.type);
  if (container) {
    compressed_type_ = forced_type_.value_or(r.header.type);
    return compression_ == Compression::kKeep ? write_original(r) : absl::OkStatus();
  }
  if (r.inner) {
    if (compression_ == Compression::kRecompress && forced_type_ == 0U) return write_bytes(r.bytes);
    if (compression_ == Compression::kRecompress) {
      to_compress_.insert(to_compress_.end(), r.bytes.begin(), r.bytes.end());
      return flush_compressed(false);
    }
    if (r.original) return absl::OkStatus();  // its compressed record carries it
    return format::malformed_at(r.offset,
                                "internal: a pass changed a record inside compressed data while "
                                "the writer keeps compressed data as it was");
  }
  if (!to_compress_.empty()) {
    if (auto s = flush_compressed(true); !s.ok()) return s;
  }
  // The AUXTRACE index (a feature of `data`) knows offsets in `data` only.
  if (r.header.type == format::kAuxtrace && r.original && r.part == 0) {
    auxtrace_moves_[r.offset] = pos_;
  }
  return r.original ? write_original(r) : write_bytes(r.bytes);
}

absl::Status Writer::finish(const FeatureEdits& edits) {
  if (auto s = flush_compressed(true); !s.ok()) return s;
  if (auto s = flush_run(); !s.ok()) return s;
  if (aligning_) {
    if (auto s = settle_pad(0); !s.ok()) return s;
  }
  if (session_.pipe() || layout_ == Layout::kBareRecords) return absl::OkStatus();
  if (auto s = write_features(edits, pos_); !s.ok()) return s;
  return write_attrs(edits);
}

absl::Status Writer::write_attrs(const FeatureEdits& edits) {
  if (!edits.attrs) return absl::OkStatus();
  const format::FileHeader& in = session_.header();
  if (edits.attrs->size() > in.attrs.size || edits.attr_size == 0) {
    return absl::InternalError("a pass's attrs section does not fit the input's");
  }
  std::vector<uint8_t> section = *edits.attrs;
  section.resize(in.attrs.size, 0);
  return out_.patch(in.attrs.offset, section);
}

absl::Status Writer::write_features(const FeatureEdits& edits, uint64_t new_data_end) {
  const format::FileHeader& in = session_.header();
  const format::Endian& e = in.endian;
  std::span<const uint8_t> file = mapped_->bytes();
  const auto& old_table = session_.feature_table();
  // Nothing moved and nothing to change: what follows the data goes out as it was, however its
  // table is laid out (pointing into the data, overlapping, ending in {0, 0}).
  const bool moved = std::any_of(auxtrace_moves_.begin(), auxtrace_moves_.end(),
                                 [](const auto& m) { return m.first != m.second; });
  // What a killed perf left after its last whole record is no feature section, and goes.
  if (in.unfinished) file = file.first(in.data.end());
  if (edits.replace.empty() && edits.remove.empty() && !moved && !zstd_ && data_pad_ == 0 &&
      new_data_end == in.data.end() && !in.unfinished) {
    if (auto s = out_.write_mapped(file.subspan(in.data.end()), {mapped_->fd(), in.data.end()});
        !s.ok()) {
      return s;
    }
    return edits.attrs ? patch_header(edits, new_data_end, in.features) : absl::OkStatus();
  }

  struct Piece {
    int id;
    uint64_t old_offset;               // 0 for an added feature
    std::span<const uint8_t> gap;      // input bytes kept before the payload
    std::span<const uint8_t> payload;  // old or new
  };
  std::vector<uint8_t> auxtrace_index;
  if (!auxtrace_moves_.empty() && !edits.replace.contains(format::kFeatAuxtrace)) {
    if (auto f = session_.feature(format::kFeatAuxtrace)) {
      auto index = format::decode_auxtrace_index(*f);
      if (!index.ok()) return index.status();
      for (auto& entry : *index) {
        if (auto it = auxtrace_moves_.find(entry.file_offset); it != auxtrace_moves_.end()) {
          entry.file_offset = it->second;
        }
      }
      auxtrace_index = format::encode_auxtrace_index(*index, e);
    }
  }
  // Data compressed anew says at which level (u32 version, type, level, ...).
  std::vector<uint8_t> compression;
  if (auto f = session_.feature(format::kFeatCompressed); f && zstd_) {
    compression = format::with_compression_level(*f, static_cast<uint32_t>(zstd_level_));
  }
  auto payload_of = [&](int id, std::span<const uint8_t> old) -> std::span<const uint8_t> {
    if (auto it = edits.replace.find(id); it != edits.replace.end()) return it->second;
    if (id == format::kFeatAuxtrace && !auxtrace_index.empty()) return auxtrace_index;
    if (id == format::kFeatCompressed && !compression.empty()) return compression;
    return old;
  };

  // Keep the input's own arrangement of payloads (and any bytes between or after them), so that a
  // recording nobody changed comes out byte for byte.
  std::vector<format::FeatureSection> by_offset(old_table.begin(), old_table.end());
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto& a, const auto& b) { return a.section.offset < b.section.offset; });
  uint64_t cursor = in.data.end() + format::kFileSectionSize * old_table.size();
  std::vector<Piece> pieces;
  for (const auto& f : by_offset) {
    if (edits.remove.contains(f.id)) {
      cursor = std::max(cursor, f.section.end());
      continue;
    }
    std::span<const uint8_t> gap;
    if (f.section.offset >= cursor) {
      gap = file.subspan(cursor, f.section.offset - cursor);
      cursor = f.section.end();
    }
    pieces.push_back({f.id, f.section.offset, gap,
                      payload_of(f.id, file.subspan(f.section.offset, f.section.size))});
  }
  std::span<const uint8_t> tail;
  if (cursor < file.size()) tail = file.subspan(cursor);
  for (const auto& [id, bytes] : edits.replace) {
    if (!in.features[id]) pieces.push_back({id, 0, {}, bytes});
  }

  std::bitset<format::kFeatureBits> bits = in.features;
  for (const auto& [id, bytes] : edits.replace) bits[id] = true;
  for (int id : edits.remove) bits[id] = false;
  uint64_t at = new_data_end + format::kFileSectionSize * bits.count();
  std::vector<format::FeatureSection> placed;
  for (const auto& p : pieces) {
    at += p.gap.size();
    placed.push_back({p.id, format::Section{at, p.payload.size()}});
    at += p.payload.size();
  }
  if (auto s = out_.write(format::encode_feature_table(std::move(placed), e)); !s.ok()) return s;
  for (const auto& p : pieces) {
    if (auto s = out_.write(p.gap); !s.ok()) return s;
    if (auto s = out_.write(p.payload); !s.ok()) return s;
  }
  if (auto s = out_.write(tail); !s.ok()) return s;
  return patch_header(edits, new_data_end, bits);
}

absl::Status Writer::patch_header(const FeatureEdits& edits, uint64_t new_data_end,
                                  const std::bitset<format::kFeatureBits>& bits) {
  const format::FileHeader& in = session_.header();
  const std::span<const uint8_t> file = mapped_->bytes();
  // The data section, the attrs a pass rewrote, and the feature bitmap when the set of features
  // changed.
  std::vector<uint8_t> head(file.begin(), file.begin() + static_cast<ptrdiff_t>(in.header_size));
  format::FileHeader patched = in;
  patched.data.offset = in.data.offset + data_pad_;
  patched.data.size = new_data_end - patched.data.offset;
  if (edits.attrs) {
    patched.attr_size = edits.attr_size;
    patched.attrs.size = edits.attrs->size();
  }
  patched.features = bits;
  format::patch_file_header(head, patched);
  // A killed perf's header names the features it meant to write.
  if (bits != in.features || in.unfinished) {
    if (in.header_size < format::kFileHeaderSize) {
      return absl::FailedPreconditionError(
          "cannot add feature sections to a 72-byte (pre-2.6.37) header");
    }
    format::patch_feature_bits(head, patched);
  }
  return out_.patch(0, head);
}

}  // namespace pdfix::transform
