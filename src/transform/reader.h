// Reads the records of a recording one at a time, as views: in file mode over the chunk it was
// read in (io::MappedFile::chunk_at) or the mapping, over a buffer in pipe mode, over the
// decompressed stream inside COMPRESSED records. A view stays valid until the next call to next()
// or skip_unwanted().
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "transform/session.h"
#include "transform/zstd_stream.h"

namespace pdfix::transform {

struct ReaderOptions {
  // Also yield the records inside COMPRESSED/COMPRESSED2 (after the compressed record itself).
  bool expand_compressed = false;
};

class RecordReader {
 public:
  // File mode over a mapping: the data section of `header`. A pipe-format file that was mapped
  // (a saved `perf record -o -`) is read as a stream from byte 16. The reader gives the pages it
  // has passed back to the kernel as it goes, so a large recording is read through a window.
  // `parts` are the data.N files of a directory recording: all records, read after `file`'s,
  // each with its own compressed stream.
  RecordReader(const io::MappedFile& file, Session& session, ReaderOptions opts,
               std::vector<const io::MappedFile*> parts = {});
  // Pipe mode over a stream whose 16-byte header has been consumed.
  RecordReader(io::PipeStream& pipe, Session& session, ReaderOptions opts);

  // The next record, or nullopt at the end of the data.
  absl::StatusOr<std::optional<RecordRef>> next();
  // In a mapped file: moves past the run of plain records (format::is_plain_type; nothing
  // compressed waiting) whose types `wanted` does not name, and returns its [offset, offset + size)
  // in the file; size 0 when the next record is not such. Millions of samples are skipped this way.
  struct Span {
    uint64_t offset = 0;
    uint64_t size = 0;
    uint32_t part = 0;  // see RecordRef::part
  };
  Span skip_unwanted(const std::bitset<128>& wanted);
  // How far the reader has come, and how far it has to go (0 when unknown, as on a pipe), over
  // all the files of a directory recording.
  uint64_t position() const;
  uint64_t end() const { return total_; }
  // True when the data held any COMPRESSED record so far.
  bool saw_compressed() const { return saw_compressed_; }
  uint32_t compressed_type() const { return compressed_type_; }

 private:
  absl::StatusOr<std::optional<RecordRef>> next_outer();
  absl::StatusOr<std::optional<RecordRef>> next_inner();
  // The full length of the record at the start of `avail` (which starts at `offset`), which may
  // be more than `avail` holds.
  absl::StatusOr<uint64_t> frame(std::span<const uint8_t> avail, uint64_t offset,
                                 format::RecordHeader& hdr) const;
  // Gives back the pages behind the read position.
  void slide_window();
  // The record header at `pos` of the file being read: from a chunk (io::MappedFile::chunk_at),
  // so that skipping records maps none of their pages.
  const uint8_t* header_at(uint64_t pos);
  // Moves on to the next data.N file, once this one is read to its end.
  void open_next_part();
  absl::StatusOr<std::optional<RecordRef>> next_in_part();
  // A record cut off by the end of a stream: an error, or a trailing tail (see RecordRef).
  absl::StatusOr<RecordRef> cut_off(std::span<const uint8_t> rest, uint64_t offset,
                                    const format::RecordHeader& hdr, uint64_t total) const;

  Session& session_;
  ReaderOptions opts_;
  const io::MappedFile* mapped_ = nullptr;
  std::span<const uint8_t> file_;
  uint64_t released_ = 0;                   // the mapping before this offset has been given back
  std::shared_ptr<const io::Chunk> chunk_;  // the one the last header was read from
  io::PipeStream* pipe_ = nullptr;
  uint64_t pos_ = 0;
  uint64_t end_ = 0;
  std::vector<const io::MappedFile*> parts_;
  size_t next_part_ = 0;
  uint32_t part_ = 0;
  uint64_t done_before_ = 0;  // the ends of the files read before this one
  uint64_t total_ = 0;
  uint64_t pending_consume_ = 0;

  std::optional<ZstdDecoder> zstd_;
  std::vector<uint8_t> inner_;
  uint64_t inner_pos_ = 0;
  uint64_t inner_base_ = 0;  // decompressed-stream offset of inner_[0]
  uint64_t container_offset_ = 0;
  bool saw_compressed_ = false;
  uint32_t compressed_type_ = 0;
};

}  // namespace pdfix::transform
