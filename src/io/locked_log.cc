#include "io/locked_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pdfix::io {

namespace {

// Whether `fd` is still the file at `path`: a log replaced (LockedLog::replace) after this
// process opened it and before it locked it is locked anew at its path.
bool still_at(int fd, const std::string& path) {
  struct stat opened{};
  struct stat now{};
  return fstat(fd, &opened) == 0 && ::stat(path.c_str(), &now) == 0 &&
         opened.st_dev == now.st_dev && opened.st_ino == now.st_ino;
}

absl::Status sync_directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", dir));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? absl::OkStatus() : absl::ErrnoToStatus(err, absl::StrCat("cannot sync ", dir));
}

}  // namespace

absl::StatusOr<LockedLog> LockedLog::open(const std::string& path, const std::string& busy) {
  int fd = -1;
  do {
    if (fd >= 0) close(fd);
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      close(fd);
      return err == EWOULDBLOCK ? absl::FailedPreconditionError(absl::StrCat(busy, " (", path, ")"))
                                : absl::ErrnoToStatus(err, absl::StrCat("cannot lock ", path));
    }
  } while (!still_at(fd, path));
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = pread(fd, buffer, sizeof buffer, static_cast<off_t>(text.size()))) > 0;) {
    text.append(buffer, static_cast<size_t>(n));
  }
  LockedLog log(fd, path, std::move(text));
  // A line cut short by a crash is ended, so that the next line starts a line of its own.
  if (!log.text_.empty() && log.text_.back() != '\n' && write(fd, "\n", 1) != 1) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
  }
  return log;
}

LockedLog::LockedLog(int fd, std::string path, std::string text)
    : fd_(fd), path_(std::move(path)), text_(std::move(text)) {}

LockedLog::LockedLog(LockedLog&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      text_(std::move(other.text_)) {}

LockedLog::~LockedLog() {
  if (fd_ >= 0) close(fd_);
}

absl::Status LockedLog::append(std::string_view lines) {
  if (write(fd_, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size()) ||
      fsync(fd_) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path_));
  }
  return absl::OkStatus();
}

absl::Status LockedLog::replace(std::string_view lines) {
  // The new file is locked before it takes the name, so the lock never lapses; a crash leaves the
  // old log or the new one at the name, each whole.
  const std::string temp = absl::StrCat(path_, ".new");
  const int fd =
      ::open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", temp));
  const auto failed = [&](const std::string& what) {
    const absl::Status s = absl::ErrnoToStatus(errno, absl::StrCat(what, " ", temp));
    close(fd);
    ::unlink(temp.c_str());
    return s;
  };
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) return failed("cannot lock");
  if (write(fd, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size()) ||
      fsync(fd) != 0) {
    return failed("cannot write");
  }
  if (::rename(temp.c_str(), path_.c_str()) != 0) return failed("cannot rename");
  close(std::exchange(fd_, fd));
  return sync_directory_of(path_);
}

}  // namespace pdfix::io
