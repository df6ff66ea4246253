#include "transform/tail.h"

#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::transform {

absl::Status TappedTail::emit(const RecordRef& r) {
  if (auto s = show(r); !s.ok()) return s;
  return next_.emit(r);
}

absl::Status TappedTail::bypass(const RecordRef& r) {
  if (auto s = show(r); !s.ok()) return s;
  return next_.bypass(r);
}

absl::Status TappedTail::untouched(uint64_t offset, uint64_t size, uint32_t part) {
  const io::MappedFile& file = *parts_[part];
  for (uint64_t at = offset; at < offset + size;) {
    // The reader framed this run before: its records are whole and plain.
    RecordRef r{.header = format::read_record_header(
                    session_.endian(), bytes_at(file, at, format::kRecordHeaderSize).data()),
                .offset = at,
                .part = part};
    r.bytes = bytes_at(file, at, r.header.size);
    if (auto s = show(r); !s.ok()) return s;
    at += r.header.size;
  }
  return next_.untouched(offset, size, part);
}

absl::Status TappedTail::show(const RecordRef& r) {
  if (r.trailing || (!r.inner && format::is_compressed_type(r.header.type)) ||
      !tap_.taps(r.header.type)) {
    return absl::OkStatus();
  }
  return tap_.record(r, session_);
}

// From the chunk the reader read them into, as the reader takes them (mapping a page costs more
// than reading it: io/input.h); from the mapping across a chunk's end.
std::span<const uint8_t> TappedTail::bytes_at(const io::MappedFile& file, uint64_t at, uint64_t n) {
  if (!chunk_ || chunk_file_ != &file || at < chunk_->offset() || at >= chunk_->end()) {
    chunk_ = file.chunk_at(at);
    chunk_file_ = &file;
  }
  if (chunk_ && at >= chunk_->offset() && at + n <= chunk_->end()) return chunk_->from(at, n);
  return file.bytes().subspan(at, n);
}

}  // namespace pdfix::transform
