#include "io/locked_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace pdfix::io {

absl::StatusOr<LockedLog> LockedLog::open(const std::string& path, const std::string& busy) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(fd);
    return err == EWOULDBLOCK ? absl::FailedPreconditionError(absl::StrCat(busy, " (", path, ")"))
                              : absl::ErrnoToStatus(err, absl::StrCat("cannot lock ", path));
  }
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

}  // namespace pdfix::io
