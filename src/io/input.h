// Inputs: a recording is either mapped read-only (a path, or a regular file on stdin) or read
// through a buffer (a pipe). Both hand out views; neither ever writes to the input.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pdfix::io {

// Bytes of a file read into memory: see MappedFile::chunk_at.
class Chunk {
 public:
  explicit Chunk(uint64_t capacity);
  ~Chunk();
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  uint64_t offset() const { return offset_; }
  uint64_t end() const { return offset_ + size_; }
  // The bytes from file offset `at` (which this chunk holds) on, at most `n` of them.
  std::span<const uint8_t> from(uint64_t at, uint64_t n) const;

 private:
  friend class MappedFile;
  uint64_t capacity_;
  uint8_t* data_;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

class ChunkPool;

// A read-only private mapping of a whole file.
class MappedFile {
 public:
  // The size of a chunk, and the alignment of its offset in the file.
  static constexpr uint64_t kChunkSize = uint64_t{256} << 10;
  // The chunks a file keeps: enough for the reader's chunk, the writer's a step behind and the
  // output's jobs (each gathers io::Output::kJobBytes, from two or three chunks).
  static constexpr size_t kKeptChunks = 16;

  // Chunks come from `pool` and go back to it, when given.
  static absl::StatusOr<std::unique_ptr<MappedFile>> open_fd(int fd, std::string name,
                                                             ChunkPool* pool = nullptr);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Tells the kernel that [offset, offset+len) will not be read again, so a sliding window over a
  // large file keeps resident memory bounded.
  void release(uint64_t offset, uint64_t len) const;
  // The kChunkSize bytes (fewer at the end) from the multiple of kChunkSize at or below
  // `offset`, read with pread; null when they cannot be read, and the mapping must be used.
  // Mapping a page costs more than copying it where page tables are shadowed (virtual machines:
  // 1 to 3 us a page, measured on this project's machine kind), and a recording is read once:
  // the bulk of it is framed and written from chunks, and only the records a pass looks at are
  // read through the mapping. Recent chunks are kept and their buffers reused once no holder is
  // left, so the memory stays a few chunks whatever the file's size. One thread only.
  std::shared_ptr<const Chunk> chunk_at(uint64_t offset) const;

 private:
  MappedFile(int fd, const uint8_t* data, uint64_t size, std::string name, ChunkPool* pool)
      : fd_(fd), data_(data), size_(size), name_(std::move(name)), pool_(pool) {}
  int fd_;
  const uint8_t* data_;
  uint64_t size_;
  std::string name_;
  ChunkPool* pool_;
  mutable std::vector<std::shared_ptr<Chunk>> chunks_;
};

// Chunk buffers that one input leaves for the next. A process that reads recording after
// recording (follow, fix IN... OUTDIR) makes its buffers once, not once a recording: making a
// chunk's pages present costs more than filling them (Chunk). One thread only; it must outlive
// the files that take from it.
class ChunkPool {
 public:
  // A buffer left by an earlier file, else a new one.
  std::shared_ptr<Chunk> take();
  // `chunk`, which nobody else holds, kept for the next file (as many as a file keeps).
  void give(std::shared_ptr<Chunk> chunk);

 private:
  std::vector<std::shared_ptr<Chunk>> spare_;
};

// A forward-only byte stream over a pipe: peek() makes the next bytes visible in one contiguous
// view (valid until the next call), consume() moves past them.
class PipeStream {
 public:
  PipeStream(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  // At least `n` bytes from the current position, or fewer only at end of input.
  absl::StatusOr<std::span<const uint8_t>> peek(uint64_t n);
  void consume(uint64_t n) { pos_ += n; }
  uint64_t offset() const { return base_ + pos_; }
  const std::string& name() const { return name_; }

 private:
  int fd_;
  std::string name_;
  std::vector<uint8_t> buf_;
  uint64_t pos_ = 0;   // read position in buf_
  uint64_t base_ = 0;  // stream offset of buf_[0]
  bool eof_ = false;
};

// What `pdfix` was given as IN: a mapped file, or a pipe (stdin) to stream from. perf record
// --threads writes a directory instead: `data` (the header, the features and the records perf
// synthesized) and one file of bare records per writing thread, data.0, data.1, ...
struct Input {
  // A file by device and inode, whatever path names it.
  struct FileId {
    uint64_t dev = 0;
    uint64_t ino = 0;
    friend bool operator==(const FileId&, const FileId&) = default;
  };

  std::unique_ptr<MappedFile> mapped;  // a directory's `data`
  std::unique_ptr<PipeStream> pipe;
  std::string name;
  bool directory = false;
  std::vector<std::unique_ptr<MappedFile>> parts;  // data.0, data.1, ... in that order
  std::vector<FileId> files;  // what is read: the file, pipe or directory and the files in it

  // "data.N": the name of parts[i] in its directory.
  std::string part_name(size_t i) const {
    const std::string& path = parts[i]->name();
    return path.substr(path.rfind('/') + 1);
  }
  std::vector<const MappedFile*> part_views() const {
    std::vector<const MappedFile*> views;
    views.reserve(parts.size());
    for (const auto& p : parts) views.push_back(p.get());
    return views;
  }
};

// When a mapped recording's file was created and last written (nanoseconds since the epoch): the
// time span of the recording. A file changed after its end is not the one that was mapped.
struct RecordingSpan {
  std::optional<int64_t> started_at;  // where the filesystem keeps a birth time
  std::optional<int64_t> ended_at;
};
RecordingSpan recording_span(const Input& in);

// "-" is stdin: mapped if it is a regular file, streamed otherwise. A directory is perf's
// directory format. Mapped files read through chunks of `pool`, when given.
absl::StatusOr<Input> open_input(const std::string& path, ChunkPool* pool = nullptr);

// Refuses `out_path` ("-": stdout) when it is one of the files `in` reads, however it is named:
// the same path, a hard or symbolic link, /proc/self/fd/N, stdout redirected to it. Writing there
// would replace the input, which pdfix never writes.
absl::Status refuse_input_as_output(const Input& in, const std::string& out_path);

}  // namespace pdfix::io
