#include "io/output.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "io/cleanup.h"

namespace pdfix::io {
namespace {

constexpr size_t kSpoolBuffer = 1 << 20;
// Views shorter than this are copied into the job.
constexpr uint64_t kMinPiece = 4096;
// A job is sent once it holds kJobBytes, so it has at most that many bytes' worth of views, each
// between two pieces of its own bytes, and one more piece: all go out in one writev.
static_assert(2 * (Output::kJobBytes / kMinPiece) + 3 <= IOV_MAX);
// Jobs waiting for the worker at most: bounds the memory held by buffered bytes, and how far
// behind the caller the worker may fall (a megabyte or two of mapped input stays in the cache).
constexpr size_t kMaxQueued = 4;
// Shorter runs are not worth an ioctl: their blocks are copied.
constexpr uint64_t kMinClone = uint64_t{64} << 10;
// Where blocks are shared, a job copying less than this is written by the caller. A job holds
// about kJobBytes, so only one carrying a large rewritten view starts the worker.
constexpr uint64_t kInlineCopy = uint64_t{1} << 20;

absl::Status errno_status(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool is_seekable_regular(int fd) {
  struct stat st{};
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0;
}

}  // namespace

std::string temp_prefix(const std::string& name) { return absl::StrCat(".", name, ".pdfix-"); }

// Where the bytes for `fd` (stdout, a device, a FIFO) go: straight there when they can be written
// in order, or through an anonymous temporary file when the header is completed last and `fd`
// cannot be written back into.
absl::StatusOr<std::unique_ptr<Output>> Output::to_fd(int fd, std::string name, Mode mode,
                                                      bool owned) {
  if (mode == Mode::kStreaming) {
    return std::unique_ptr<Output>(new Output(fd, std::move(name), "", {.owned = owned}));
  }
  if (is_seekable_regular(fd)) {
    // A failure cuts the file back to the nothing it was, so no partial perf.data is left.
    return std::unique_ptr<Output>(
        new Output(fd, std::move(name), "", {.owned = owned, .truncate_on_abort = true}));
  }
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  const int spool = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (spool < 0) {
    if (owned) close(fd);
    return errno_status(absl::StrCat("cannot create a temporary file in ", dir));
  }
  return std::unique_ptr<Output>(
      new Output(spool, std::move(name), "", {.spool_to = fd, .owned = owned}));
}

absl::StatusOr<std::unique_ptr<Output>> Output::create(const std::string& path, Mode mode,
                                                       mode_t permissions) {
  if (path.empty()) return absl::InvalidArgumentError("OUT is empty: give a path, or - for stdout");
  if (path == "-") return to_fd(STDOUT_FILENO, "<stdout>", mode, /*owned=*/false);
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device, FIFO or socket is written to, never replaced; anything else is left alone.
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) ||
        S_ISSOCK(st.st_mode)) {
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) return errno_status(absl::StrCat("cannot open ", path));
      return to_fd(fd, path, mode, /*owned=*/true);
    }
    return absl::FailedPreconditionError(absl::StrCat(
        path, S_ISDIR(st.st_mode) ? " is a directory" : " is a symbolic link",
        "; pdfix writes OUT by renaming a finished file over it, which it does only to a regular "
        "file"));
  }
  std::string temp =
      absl::StrCat(dir_of(path), "/", temp_prefix(path.substr(path.rfind('/') + 1)), "XXXXXX");
  const int slot = remember_temp(temp);
  int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    forget_temp(slot);
    return errno_status(absl::StrCat("cannot create a temporary file beside ", path));
  }
  forget_temp(slot);
  // mkostemp wrote the name it chose into `temp`.
  const int named = remember_temp(temp);
  // mkostemp makes 0600.
  if (permissions != 0600 && fchmod(fd, permissions) != 0) {
    absl::Status st = errno_status(absl::StrCat("cannot set the permissions of ", temp));
    unlink(temp.c_str());
    forget_temp(named);
    close(fd);
    return st;
  }
  return std::unique_ptr<Output>(new Output(fd, path, temp, {.temp_slot = named}));
}

Output::Output(int fd, std::string target, std::string temp, Where where)
    : fd_(fd), target_(std::move(target)), temp_(std::move(temp)), where_(where) {}

Output::~Output() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (!committed_ && !temp_.empty()) unlink(temp_.c_str());
  if (!committed_ && where_.truncate_on_abort && ftruncate(fd_, 0) != 0) {
    // Nothing more can be done: the caller reports the error that stopped the output.
  }
  forget_temp(where_.temp_slot);
  if (where_.spool_to >= 0) {
    close(fd_);
    if (where_.owned) close(where_.spool_to);
  } else if (fd_ > STDERR_FILENO || where_.owned) {
    close(fd_);
  }
}

void Output::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool abandoned = !error_.ok() || stop_;
    lock.unlock();
    changed_.notify_all();
    // After a failure, or when the Output is dropped uncommitted, the rest is skipped: it would
    // go to a file about to be removed, and a mapping it views may be on its way out.
    absl::Status s = abandoned ? absl::OkStatus() : run(job);
    lock.lock();
    busy_ = false;
    if (!s.ok() && error_.ok()) error_ = s;
    changed_.notify_all();
  }
}

absl::Status Output::enqueue(Job job) {
  if (!worker_.joinable()) {
    // Where blocks are shared, a job that copies little costs less than handing it to a thread
    // and waiting for it: the caller runs it. The worker starts with the first job that copies
    // much, and runs every job after it, in order.
    uint64_t copied = job.bytes.size();
    for (const Piece& p : job.pieces) {
      if (p.data != nullptr && (p.from.fd < 0 || p.len < kMinClone)) copied += p.len;
    }
    if (sharing_blocks() && copied < kInlineCopy) {
      if (!error_.ok()) return error_;
      error_ = run(job);
      return error_;
    }
    worker_ = std::thread([this] { work(); });
  }
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(job));
  lock.unlock();
  changed_.notify_all();
  return absl::OkStatus();
}

absl::Status Output::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
  return error_;
}

absl::Status Output::run(const Job& job) {
  std::vector<struct iovec> iov;
  uint64_t at = job.at;
  for (const Piece& p : job.pieces) {
    const uint8_t* data = p.data != nullptr ? p.data : job.bytes.data() + p.offset;
    if (p.from.fd >= 0 && p.len >= kMinClone &&
        cloning_.load(std::memory_order_relaxed) != kRefused) {
      if (auto s = write_vector(iov); !s.ok()) return s;
      if (auto s = clone_or_write(data, p.len, p.from, at); !s.ok()) return s;
    } else {
      iov.push_back({const_cast<uint8_t*>(data), p.len});
    }
    at += p.len;
  }
  return write_vector(iov);
}

// FICLONERANGE shares whole filesystem blocks, so source and destination must sit at the same
// offset within a block: the writer keeps untouched runs where they were within a page (the pad
// before the data section). The edges of a run are written as usual.
absl::Status Output::clone_or_write(const uint8_t* data, uint64_t n, Origin from, uint64_t at) {
  if (block_ == 0) {
    struct statfs fs{};
    if (fstatfs(fd_, &fs) != 0 || fs.f_bsize <= 0) {
      cloning_.store(kRefused, std::memory_order_relaxed);
      return write_all(data, n);
    }
    block_ = static_cast<uint64_t>(fs.f_bsize);
  }
  const uint64_t block = block_;
  const uint64_t head = (block - at % block) % block;
  if ((from.offset + head) % block != 0 || n < head + kMinClone) return write_all(data, n);
  const uint64_t body = (n - head) / block * block;
  if (auto s = write_all(data, head); !s.ok()) return s;
  file_clone_range range{};
  range.src_fd = from.fd;
  range.src_offset = from.offset + head;
  range.src_length = body;
  range.dest_offset = at + head;
  if (ioctl(fd_, FICLONERANGE, &range) != 0) {
    // Another filesystem, one that cannot share blocks, or a temporary file elsewhere: the bytes
    // are copied, now and for the rest of this output.
    cloning_.store(kRefused, std::memory_order_relaxed);
    return write_all(data + head, n - head);
  }
  cloning_.store(kClones, std::memory_order_relaxed);
  if (lseek(fd_, static_cast<off_t>(at + head + body), SEEK_SET) < 0) {
    return errno_status(absl::StrCat("cannot write ", target_));
  }
  return write_all(data + head + body, n - head - body);
}

void Output::probe_sharing(int input) {
  if (temp_.empty() || pos_ != 0 || cloning_.load(std::memory_order_relaxed) != kUntried) return;
  struct statfs fs{};
  struct stat st{};
  if (fstatfs(fd_, &fs) != 0 || fs.f_bsize <= 0 || fstat(input, &st) != 0) return;
  const auto block = static_cast<uint64_t>(fs.f_bsize);
  if (static_cast<uint64_t>(st.st_size) < block) return;
  // One block cloned to where the header goes, and cut off again: nothing is left of it.
  file_clone_range range{};
  range.src_fd = input;
  range.src_length = block;
  const bool shares = ioctl(fd_, FICLONERANGE, &range) == 0;
  if (ftruncate(fd_, 0) != 0) return;
  // The worker reads these after the first job is queued, under the queue's lock.
  block_ = block;
  cloning_.store(shares ? kClones : kRefused, std::memory_order_relaxed);
}

absl::Status Output::write_all(const uint8_t* p, uint64_t n) {
  std::vector<struct iovec> iov{{const_cast<uint8_t*>(p), n}};
  return write_vector(iov);
}

// Writes and empties `iov`.
absl::Status Output::write_vector(std::vector<struct iovec>& iov) {
  size_t first = 0;
  while (first < iov.size()) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    const ssize_t w = writev(fd_, iov.data() + first, static_cast<int>(iov.size() - first));
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EFAULT) {
        return absl::DataLossError(
            absl::StrCat("cannot write ", target_, ": the input shrank while it was being read"));
      }
      return errno_status(absl::StrCat("cannot write ", target_));
    }
    for (auto done = static_cast<uint64_t>(w); done > 0;) {
      const uint64_t n = std::min<uint64_t>(done, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + n;
      iov[first].iov_len -= n;
      done -= n;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  iov.clear();
  return absl::OkStatus();
}

absl::Status Output::flush() {
  if (job_.pieces.empty()) return absl::OkStatus();
  Job job = std::move(job_);
  job_ = Job{};
  job_.at = pos_;
  return enqueue(std::move(job));
}

absl::Status Output::write(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return absl::OkStatus();
  if (job_.bytes.capacity() < kJobBytes) job_.bytes.reserve(kJobBytes);
  if (job_.pieces.empty() || job_.pieces.back().data != nullptr) {
    job_.pieces.push_back({.offset = job_.bytes.size()});
  }
  job_.bytes.insert(job_.bytes.end(), bytes.begin(), bytes.end());
  job_.pieces.back().len += bytes.size();
  job_.len += bytes.size();
  pos_ += bytes.size();
  return job_.len >= kJobBytes ? flush() : absl::OkStatus();
}

absl::Status Output::write_mapped(std::span<const uint8_t> mapped, Origin from,
                                  std::shared_ptr<const void> keep) {
  // A short view costs the worker more as a piece of its own than as a copy.
  if (mapped.size() < kMinPiece) return write(mapped);
  job_.pieces.push_back(
      {.data = mapped.data(), .len = mapped.size(), .from = from, .keep = std::move(keep)});
  job_.len += mapped.size();
  pos_ += mapped.size();
  return job_.len >= kJobBytes ? flush() : absl::OkStatus();
}

absl::Status Output::patch(uint64_t offset, std::span<const uint8_t> bytes) {
  if (auto s = flush(); !s.ok()) return s;
  if (auto s = drain(); !s.ok()) return s;
  uint64_t done = 0;
  while (done < bytes.size()) {
    ssize_t w =
        pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_status("cannot patch the output header");
    }
    done += static_cast<uint64_t>(w);
  }
  return absl::OkStatus();
}

absl::Status Output::commit() {
  if (auto s = flush(); !s.ok()) return s;
  if (auto s = drain(); !s.ok()) return s;
  if (mtime_ && (!temp_.empty() || where_.truncate_on_abort)) {
    const struct timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, *mtime_};
    if (futimens(fd_, times) != 0) {
      return errno_status(absl::StrCat("cannot set the modification time of ", target_));
    }
  }
  if (where_.spool_to >= 0) {
    // The temporary file holds the finished perf.data; now it may go out.
    if (auto s = send_spool(); !s.ok()) return s;
  } else if (!temp_.empty()) {
    if (rename(temp_.c_str(), target_.c_str()) != 0) {
      return errno_status(absl::StrCat("cannot rename the finished output to ", target_));
    }
  }
  committed_ = true;
  return absl::OkStatus();
}

absl::Status Output::send_spool() {
  off_t off = 0;
  uint64_t left = pos_;
  while (left > 0) {
    ssize_t n = sendfile(where_.spool_to, fd_, &off, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EINVAL || errno == ENOSYS)) break;  // a sink sendfile cannot feed
    if (n <= 0) return errno_status(absl::StrCat("cannot write ", target_));
    left -= static_cast<uint64_t>(n);
  }
  std::vector<uint8_t> chunk(kSpoolBuffer);
  while (left > 0) {
    ssize_t got = pread(fd_, chunk.data(), std::min<uint64_t>(left, chunk.size()), off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return errno_status("cannot read back the spooled output");
    for (ssize_t done = 0; done < got;) {
      ssize_t w = ::write(where_.spool_to, chunk.data() + done, static_cast<size_t>(got - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return errno_status(absl::StrCat("cannot write ", target_));
      done += w;
    }
    off += got;
    left -= static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace pdfix::io
