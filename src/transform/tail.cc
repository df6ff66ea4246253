#include "transform/tail.h"

#include "absl/strings/str_cat.h"
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
  const uint64_t end = offset + size;
  for (uint64_t at = offset; at < end;) {
    // The reader framed this run before: its records are whole and plain. Those wholly in the
    // chunk that holds `at` are framed from it as they lie, one after another; the one across
    // its end, if any, from bytes_at.
    const std::span<const uint8_t> run =
        chunk_for(file, at) ? chunk_->from(at, end - at) : std::span<const uint8_t>();
    uint64_t in = 0;
    while (in + format::kRecordHeaderSize <= run.size()) {
      const format::RecordHeader h = format::read_record_header(session_.endian(), &run[in]);
      if (h.size < format::kRecordHeaderSize || in + h.size > run.size()) break;
      if (auto s = show(
              {.bytes = run.subspan(in, h.size), .header = h, .offset = at + in, .part = part});
          !s.ok()) {
        return s;
      }
      in += h.size;
    }
    at += in;
    if (at >= end) break;
    RecordRef r{.header = format::read_record_header(
                    session_.endian(), bytes_at(file, at, format::kRecordHeaderSize).data()),
                .offset = at,
                .part = part};
    if (r.header.size < format::kRecordHeaderSize) {
      return absl::InternalError(absl::StrCat("a record of ", r.header.size, " bytes at ", at,
                                              " in a run the reader framed"));
    }
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
// than reading it: io/input.h). A record across a chunk's end is copied together from the two
// chunks (the reader framed it, so both are still kept): read through the mapping, each was a
// page fault, a few hundred on a 90 MB recording. From the mapping when a chunk cannot be read.
bool TappedTail::chunk_for(const io::MappedFile& file, uint64_t at) {
  if (!chunk_ || chunk_file_ != &file || at < chunk_->offset() || at >= chunk_->end()) {
    chunk_ = file.chunk_at(at);
    chunk_file_ = &file;
  }
  return chunk_ && at >= chunk_->offset() && at < chunk_->end();
}

std::span<const uint8_t> TappedTail::bytes_at(const io::MappedFile& file, uint64_t at, uint64_t n) {
  if (!chunk_for(file, at)) return file.bytes().subspan(at, n);
  if (at + n <= chunk_->end()) return chunk_->from(at, n);
  across_.clear();
  while (chunk_ && across_.size() < n) {
    const uint64_t from = at + across_.size();
    if (from < chunk_->offset() || from >= chunk_->end()) break;
    const std::span<const uint8_t> part = chunk_->from(from, n - across_.size());
    across_.insert(across_.end(), part.begin(), part.end());
    if (across_.size() < n) chunk_ = file.chunk_at(chunk_->end());
  }
  if (across_.size() < n) return file.bytes().subspan(at, n);
  return across_;
}

}  // namespace pdfix::transform
