#include "io/input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pdfix::io {
namespace {

absl::Status errno_status(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

Input::FileId file_id(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

constexpr uint64_t kPipeChunk = 1 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::open_fd(int fd, std::string name,
                                                                ChunkPool* pool) {
  struct stat st{};
  if (fstat(fd, &st) != 0) return errno_status(absl::StrCat("cannot stat ", name));
  const uint8_t* data = nullptr;
  if (st.st_size > 0) {
    void* p = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return errno_status(absl::StrCat("cannot map ", name));
    madvise(p, st.st_size, MADV_SEQUENTIAL);
    data = static_cast<const uint8_t*>(p);
  }
  return std::unique_ptr<MappedFile>(
      new MappedFile(fd, data, static_cast<uint64_t>(st.st_size), std::move(name), pool));
}

MappedFile::~MappedFile() {
  if (pool_ != nullptr) {
    // The output worker let go of them after writing from them; what it read happens before.
    std::atomic_thread_fence(std::memory_order_acquire);
    for (auto& c : chunks_) {
      if (c.use_count() == 1) pool_->give(std::move(c));
    }
  }
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ > STDERR_FILENO) close(fd_);
}

void MappedFile::release(uint64_t offset, uint64_t len) const {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t begin = (offset + page - 1) / page * page;
  uint64_t end = (offset + len) / page * page;
  if (data_ != nullptr && end > begin) {
    madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
  }
}

Chunk::Chunk(uint64_t capacity) : capacity_(capacity) {
  // Page-aligned like the mapping, so a write from a chunk copies whole pages as from there; its
  // pages made present in one call, where each page's first fault would cost more than the copy
  // into it (virtual machines whose page tables are shadowed: 10 us a fault, measured).
  void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
}

Chunk::~Chunk() { munmap(data_, capacity_); }

std::shared_ptr<Chunk> ChunkPool::take() {
  if (spare_.empty()) return std::make_shared<Chunk>(MappedFile::kChunkSize);
  std::shared_ptr<Chunk> chunk = std::move(spare_.back());
  spare_.pop_back();
  return chunk;
}

void ChunkPool::give(std::shared_ptr<Chunk> chunk) {
  if (spare_.size() < MappedFile::kKeptChunks) spare_.push_back(std::move(chunk));
}

std::span<const uint8_t> Chunk::from(uint64_t at, uint64_t n) const {
  return {data_ + (at - offset_), std::min(n, end() - at)};
}

std::shared_ptr<const Chunk> MappedFile::chunk_at(uint64_t offset) const {
  const uint64_t base = offset / kChunkSize * kChunkSize;
  if (base >= size_) return nullptr;
  for (const auto& c : chunks_) {
    if (c->offset_ == base && c->size_ > 0) return c;
  }
  // The buffer of the oldest chunk nobody holds any more; a new one while fewer are kept.
  std::shared_ptr<Chunk> chunk;
  for (auto& c : chunks_) {
    if (c.use_count() == 1 && (!chunk || c->offset_ < chunk->offset_)) chunk = c;
  }
  if (chunk) {
    // The output worker let go of it after writing from it; what it read happens before this.
    std::atomic_thread_fence(std::memory_order_acquire);
  } else {
    chunk = pool_ != nullptr ? pool_->take() : std::make_shared<Chunk>(kChunkSize);
    if (chunks_.size() < kKeptChunks) chunks_.push_back(chunk);
  }
  const uint64_t want = std::min(kChunkSize, size_ - base);
  chunk->offset_ = base;
  chunk->size_ = 0;
  while (chunk->size_ < want) {
    const ssize_t got = pread(fd_, chunk->data_ + chunk->size_, want - chunk->size_,
                              static_cast<off_t>(base + chunk->size_));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // An error, or a file that shrank: the mapping's own fault handling reports it. The
      // buffer holds nothing that can be handed out again.
      chunk->size_ = 0;
      return nullptr;
    }
    chunk->size_ += static_cast<uint64_t>(got);
  }
  return chunk;
}

absl::StatusOr<std::span<const uint8_t>> PipeStream::peek(uint64_t n) {
  while (buf_.size() - pos_ < n && !eof_) {
    if (pos_ > 0) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(pos_));
      base_ += pos_;
      pos_ = 0;
    }
    // The buffer grows with what arrives, never by what a size field claims: at most doubling
    // per read, so a record that says it is a terabyte costs only the bytes really sent.
    const size_t old = buf_.size();
    buf_.resize(old + std::min<uint64_t>(n - old, std::max<uint64_t>(kPipeChunk, old)));
    ssize_t got;
    do {
      got = read(fd_, buf_.data() + old, buf_.size() - old);
    } while (got < 0 && errno == EINTR);
    if (got < 0) return errno_status(absl::StrCat("cannot read ", name_));
    buf_.resize(old + static_cast<size_t>(got));
    if (got == 0) eof_ = true;
  }
  return std::span<const uint8_t>(buf_.data() + pos_, std::min<uint64_t>(n, buf_.size() - pos_));
}

namespace {

// The regular file `path`, mapped.
absl::StatusOr<std::unique_ptr<MappedFile>> map_file(const std::string& path, ChunkPool* pool) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno_status(absl::StrCat("cannot open ", path));
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  return MappedFile::open_fd(fd, path, pool);
}

absl::StatusOr<Input> open_directory(const std::string& path, ChunkPool* pool) {
  Input in;
  in.name = path;
  in.directory = true;
  auto data = map_file(path + "/data", pool);
  if (!data.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is a directory without a perf.data `data` file in it (",
                     data.status().message(), ")"));
  }
  in.mapped = *std::move(data);
  struct stat st{};
  if (stat(path.c_str(), &st) == 0) in.files.push_back(file_id(st));
  // data.<n>, in the order of n: perf names the files by writing thread.
  std::vector<std::pair<uint64_t, std::string>> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename();
    uint64_t n = 0;
    if (name.starts_with("data.") && absl::SimpleAtoi(name.substr(5), &n) &&
        name.find_first_not_of("0123456789", 5) == std::string::npos) {
      names.emplace_back(n, name);
    }
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot list ", path, ": ", ec.message()));
  std::sort(names.begin(), names.end());
  for (const auto& [n, name] : names) {
    auto part = map_file(absl::StrCat(path, "/", name), pool);
    if (!part.ok()) return part.status();
    in.parts.push_back(*std::move(part));
  }
  for (const MappedFile* f : in.part_views()) {
    if (fstat(f->fd(), &st) == 0) in.files.push_back(file_id(st));
  }
  if (fstat(in.mapped->fd(), &st) == 0) in.files.push_back(file_id(st));
  return in;
}

}  // namespace

absl::StatusOr<Input> open_input(const std::string& path, ChunkPool* pool) {
  Input in;
  in.name = path == "-" ? "<stdin>" : path;
  int fd = STDIN_FILENO;
  if (path != "-") {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno_status(absl::StrCat("cannot open ", path));
  }
  struct stat st{};
  if (fstat(fd, &st) != 0) return errno_status(absl::StrCat("cannot stat ", in.name));
  if (S_ISDIR(st.st_mode)) {
    if (fd != STDIN_FILENO) close(fd);
    return open_directory(path, pool);
  }
  in.files.push_back(file_id(st));
  if (S_ISREG(st.st_mode)) {
    auto mapped = MappedFile::open_fd(fd, in.name, pool);
    if (!mapped.ok()) return mapped.status();
    in.mapped = *std::move(mapped);
  } else {
    in.pipe = std::make_unique<PipeStream>(fd, in.name);
  }
  return in;
}

absl::Status refuse_input_as_output(const Input& in, const std::string& out_path) {
  struct stat st{};
  const bool to_stdout = out_path == "-";
  if (to_stdout ? fstat(STDOUT_FILENO, &st) != 0 : stat(out_path.c_str(), &st) != 0) {
    return absl::OkStatus();  // nothing there yet: it cannot be the input
  }
  // A device such as /dev/null may be both ends; writing to it replaces nothing.
  if (S_ISCHR(st.st_mode)) return absl::OkStatus();
  const std::string out = to_stdout ? "stdout" : out_path;
  for (const Input::FileId& f : in.files) {
    if (f == file_id(st)) {
      return absl::InvalidArgumentError(
          absl::StrCat(out, " is ", in.name, " (device ", major(st.st_dev), ":", minor(st.st_dev),
                       ", inode ", st.st_ino, "): pdfix never writes its input; give another OUT"));
    }
  }
  return absl::OkStatus();
}

RecordingSpan recording_span(const Input& in) {
  RecordingSpan span;
  if (in.mapped == nullptr) return span;
  struct statx st{};
  if (statx(in.mapped->fd(), "", AT_EMPTY_PATH, STATX_MTIME | STATX_BTIME, &st) != 0) return span;
  const auto nanos = [](const statx_timestamp& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  span.ended_at = nanos(st.stx_mtime);
  if ((st.stx_mask & STATX_BTIME) != 0) span.started_at = nanos(st.stx_btime);
  return span;
}

}  // namespace pdfix::io
