#include "transform/reader.h"

#include <algorithm>

#include "format/error.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::transform {

using format::malformed_at;

namespace {
// How much of the mapping is read before the pages behind are given back.
constexpr uint64_t kReleaseStep = uint64_t{16} << 20;
// How far behind the read position pages are kept: where the output clones untouched runs, it
// writes their edges from the mapping a few jobs behind the reader (io::Output), and a page given
// back before that would be mapped again, and then kept.
constexpr uint64_t kReleaseLag = uint64_t{8} << 20;
// At most this much is skipped in one call, so that the window slides and the writer can hand
// over what was skipped while it is still in the cache.
constexpr uint64_t kMaxSkip = uint64_t{256} << 10;
// The largest record taken inside compressed data: a ring-buffer record is at most 64 KiB; room
// is left for payloads, which perf does not compress.
constexpr uint64_t kMaxInnerRecord = uint64_t{1} << 20;
}  // namespace

RecordReader::RecordReader(const io::MappedFile& file, Session& session, ReaderOptions opts,
                           std::vector<const io::MappedFile*> parts)
    : session_(session),
      opts_(opts),
      mapped_(&file),
      file_(file.bytes()),
      parts_(std::move(parts)) {
  const format::FileHeader& h = session.header();
  pos_ = h.pipe ? format::kPipeHeaderSize : h.data.offset;
  end_ = h.pipe ? file_.size() : h.data.end();
  released_ = pos_;
  total_ = end_;
  for (const io::MappedFile* p : parts_) total_ += p->bytes().size();
}

void RecordReader::open_next_part() {
  done_before_ += end_;
  mapped_ = parts_[next_part_++];
  part_ = static_cast<uint32_t>(next_part_);
  file_ = mapped_->bytes();
  pos_ = released_ = 0;
  chunk_.reset();
  end_ = file_.size();
  // Each thread compressed its file on its own.
  zstd_.reset();
  inner_.clear();
  inner_pos_ = inner_base_ = 0;
}

void RecordReader::slide_window() {
  if (pos_ - released_ >= kReleaseStep + kReleaseLag) {
    const uint64_t upto = pos_ - kReleaseLag;
    mapped_->release(released_, upto - released_);
    released_ = upto;
  }
}

const uint8_t* RecordReader::header_at(uint64_t pos) {
  if (!chunk_ || pos < chunk_->offset() || pos >= chunk_->end()) chunk_ = mapped_->chunk_at(pos);
  // A header across two chunks (after an unaligned COMPRESSED record), or a file that cannot be
  // read: from the mapping.
  if (!chunk_ || chunk_->end() < pos + format::kRecordHeaderSize) return file_.data() + pos;
  return chunk_->from(pos, format::kRecordHeaderSize).data();
}

RecordReader::RecordReader(io::PipeStream& pipe, Session& session, ReaderOptions opts)
    : session_(session), opts_(opts), pipe_(&pipe) {}

uint64_t RecordReader::position() const {
  return pipe_ != nullptr ? pipe_->offset() : done_before_ + pos_;
}

absl::StatusOr<uint64_t> RecordReader::frame(std::span<const uint8_t> avail, uint64_t offset,
                                             format::RecordHeader& hdr) const {
  const format::Endian& e = session_.endian();
  if (avail.size() < format::kRecordHeaderSize) {
    return malformed_at(offset, "data ends inside a record header (", avail.size(), " bytes left)");
  }
  hdr = format::read_record_header(e, avail.data());
  if (hdr.size < format::kRecordHeaderSize) {
    return malformed_at(offset, format::record_type_name(hdr.type), " record has size ", hdr.size,
                        ", smaller than its own 8-byte header");
  }
  uint64_t total = hdr.size;
  if (session_.header().simpleperf()) {
    // simpleperf's own records keep a 32-bit size, the high half where perf has misc; its
    // TRACING_DATA counts the payload in header.size, as no perf does.
    if (hdr.type >= format::kSimpleperfFirst) {
      total = (uint64_t{hdr.misc} << 16) | hdr.size;
      return total;
    }
    if (hdr.type == format::kHeaderTracingData) return total;
  }
  if (hdr.type == format::kHeaderTracingData || hdr.type == format::kAuxtrace) {
    // These two carry a payload that header.size does not count; its length is in the body.
    const uint32_t fixed = hdr.type == format::kAuxtrace ? format::kAuxtraceRecordSize
                                                         : format::kTracingDataRecordSize;
    if (hdr.size < fixed || avail.size() < fixed) {
      return malformed_at(offset, format::record_type_name(hdr.type),
                          " record is shorter than its ", fixed, "-byte body");
    }
    const uint64_t payload = format::unframed_payload_size(avail, hdr.type, e).value_or(0);
    if (payload > (uint64_t{1} << 40)) {
      return malformed_at(offset, format::record_type_name(hdr.type),
                          " record claims a payload of ", payload, " bytes");
    }
    total += payload;
  }
  return total;
}

absl::StatusOr<RecordRef> RecordReader::cut_off(std::span<const uint8_t> rest, uint64_t offset,
                                                const format::RecordHeader& hdr,
                                                uint64_t total) const {
  // A recording cut short ends inside a record of a type perf writes; bytes that do not even
  // start with a known type are something appended to a stream, which perf reads past the end of.
  if (session_.pipe() && !format::is_known_type(hdr.type)) {
    RecordRef r{rest, hdr, offset, 0, false, true};
    r.trailing = true;
    return r;
  }
  return malformed_at(offset, format::record_type_name(hdr.type), " record of ", total,
                      " bytes runs past the end of the data (", rest.size(), " bytes left)");
}

RecordReader::Span RecordReader::skip_unwanted(const std::bitset<128>& wanted) {
  while (pipe_ == nullptr && pos_ >= end_ && inner_pos_ >= inner_.size() &&
         next_part_ < parts_.size()) {
    open_next_part();
  }
  Span span{pos_, 0, part_};
  if (pipe_ != nullptr || inner_pos_ < inner_.size()) return span;
  const format::Endian& e = session_.endian();
  uint64_t pos = pos_;
  const uint64_t limit = pos_ + std::min(kMaxSkip, end_ - pos_);
  while (pos < limit && limit - pos >= format::kRecordHeaderSize) {
    const format::RecordHeader hdr = format::read_record_header(e, header_at(pos));
    if (hdr.size < format::kRecordHeaderSize || hdr.size > end_ - pos ||
        !format::is_plain_type(hdr.type) || wanted[hdr.type]) {
      break;
    }
    pos += hdr.size;
  }
  span.size = pos - pos_;
  pos_ = pos;
  slide_window();
  return span;
}

absl::StatusOr<std::optional<RecordRef>> RecordReader::next() {
  while (true) {
    auto r = next_in_part();
    if (!r.ok() || !r->has_value()) {
      if (r.ok() && next_part_ < parts_.size()) {
        open_next_part();
        continue;
      }
      return r;
    }
    (*r)->part = part_;
    return r;
  }
}

absl::StatusOr<std::optional<RecordRef>> RecordReader::next_in_part() {
  // Most records of a mapped file are plain ones that need no more than their header: frame them
  // here, and leave payloads, compressed data, the session's records and errors to the general
  // path.
  if (pipe_ == nullptr && inner_pos_ >= inner_.size() && end_ - pos_ >= format::kRecordHeaderSize) {
    const format::RecordHeader hdr = format::read_record_header(session_.endian(), header_at(pos_));
    if (hdr.size >= format::kRecordHeaderSize && hdr.size <= end_ - pos_ &&
        format::is_plain_type(hdr.type)) {
      // From the chunk the header came from when it holds the whole record: its pages are not
      // mapped for one look.
      const bool in_chunk = chunk_ && pos_ >= chunk_->offset() && chunk_->end() - pos_ >= hdr.size;
      const std::span<const uint8_t> bytes =
          in_chunk ? chunk_->from(pos_, hdr.size) : file_.subspan(pos_, hdr.size);
      RecordRef r{bytes, hdr, pos_, 0, false, true};
      pos_ += hdr.size;
      slide_window();
      return r;
    }
  }
  if (pipe_ != nullptr && pending_consume_ > 0) {
    pipe_->consume(pending_consume_);
    pending_consume_ = 0;
  }
  if (opts_.expand_compressed) {
    auto inner = next_inner();
    if (!inner.ok() || inner->has_value()) return inner;
  }
  auto outer = next_outer();
  if (outer.ok() && !outer->has_value() && inner_pos_ < inner_.size()) {
    return malformed_at(container_offset_, "compressed data ends inside a record (",
                        inner_.size() - inner_pos_, " decompressed bytes left over)");
  }
  return outer;
}

absl::StatusOr<std::optional<RecordRef>> RecordReader::next_inner() {
  if (inner_pos_ >= inner_.size()) return std::nullopt;
  auto avail = std::span<const uint8_t>(inner_).subspan(inner_pos_);
  if (avail.size() < format::kRecordHeaderSize) return std::nullopt;
  format::RecordHeader hdr;
  auto total = frame(avail, container_offset_, hdr);
  if (!total.ok()) {
    return malformed_at(container_offset_, "inside compressed data at decompressed offset 0x",
                        absl::Hex(inner_base_ + inner_pos_), ": ", total.status().message());
  }
  // A record may continue in the next compressed record, but not without bound: inside
  // compressed data are ring-buffer records, which are at most 64 KiB.
  if (*total > kMaxInnerRecord) {
    return malformed_at(container_offset_, "inside compressed data at decompressed offset 0x",
                        absl::Hex(inner_base_ + inner_pos_), ": a ",
                        format::record_type_name(hdr.type), " record claims ", *total, " bytes");
  }
  if (*total > avail.size()) return std::nullopt;
  RecordRef r{avail.first(*total), hdr, container_offset_, inner_base_ + inner_pos_, true, true};
  inner_pos_ += *total;
  if (auto s = session_.observe(r); !s.ok()) return s;
  return r;
}

absl::StatusOr<std::optional<RecordRef>> RecordReader::next_outer() {
  std::span<const uint8_t> rec;
  format::RecordHeader hdr;
  uint64_t offset = 0;
  if (pipe_ == nullptr) {
    if (pos_ >= end_) return std::nullopt;
    offset = pos_;
    auto avail = file_.subspan(pos_, end_ - pos_);
    auto total = frame(avail, offset, hdr);
    if (!total.ok()) return total.status();
    if (*total > avail.size()) {
      pos_ = end_;
      return cut_off(avail, offset, hdr, *total);
    }
    rec = avail.first(*total);
    pos_ += *total;
    slide_window();
  } else {
    offset = pipe_->offset();
    // Enough for the longest fixed body that tells a payload length (AUXTRACE's).
    auto head = pipe_->peek(format::kAuxtraceRecordSize);
    if (!head.ok()) return head.status();
    if (head->empty()) return std::nullopt;
    auto total = frame(*head, offset, hdr);
    if (!total.ok()) return total.status();
    auto whole = pipe_->peek(*total);
    if (!whole.ok()) return whole.status();
    pending_consume_ = whole->size();
    if (whole->size() < *total) return cut_off(*whole, offset, hdr, *total);
    rec = *whole;
  }
  RecordRef r{rec, hdr, offset, 0, false, true};
  if (auto s = session_.observe(r); !s.ok()) return s;
  if (format::is_compressed_type(hdr.type)) {
    saw_compressed_ = true;
    compressed_type_ = hdr.type;
    if (opts_.expand_compressed) {
      auto payload = format::compressed_payload(rec, session_.endian(), offset);
      if (!payload.ok()) return payload.status();
      if (!zstd_) zstd_.emplace();
      inner_.erase(inner_.begin(), inner_.begin() + static_cast<ptrdiff_t>(inner_pos_));
      inner_base_ += inner_pos_;
      inner_pos_ = 0;
      if (auto s = zstd_->decode(*payload, inner_); !s.ok()) {
        return malformed_at(offset, format::record_type_name(hdr.type), ": ", s.message());
      }
      container_offset_ = offset;
    }
  }
  return r;
}

}  // namespace pdfix::transform
