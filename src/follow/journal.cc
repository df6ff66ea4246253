#include "follow/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pdfix::follow {
namespace {

absl::Status sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) return absl::ErrnoToStatus(err, absl::StrCat("cannot sync ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status sync_to_disk(const std::string& path) {
  // A directory recording: each of its files, then the directory that names them.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
      if (absl::Status s = sync_path(e.path(), O_RDONLY); !s.ok()) return s;
    }
  }
  if (absl::Status s = sync_path(path, O_RDONLY); !s.ok()) return s;
  const size_t slash = path.rfind('/');
  return sync_path(slash == std::string::npos ? "." : path.substr(0, std::max<size_t>(slash, 1)),
                   O_RDONLY | O_DIRECTORY);
}

absl::StatusOr<Journal> Journal::open(const std::string& dir) {
  // One run an output directory: a second would fix the same chunks and take the first's
  // temporary files for a killed run's.
  auto log = io::LockedLog::open(absl::StrCat(dir, "/", kName),
                                 absl::StrCat("another pdfix follow is writing into ", dir));
  if (!log.ok()) return log.status();
  std::map<std::string, int> finished;
  size_t lines = 0;
  // A line cut short by a crash has no status and is not taken: its chunk is looked at again.
  for (absl::string_view line : absl::StrSplit(log->text(), '\n', absl::SkipEmpty())) {
    ++lines;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    int status = 0;
    if (fields.size() == 2 && absl::SimpleAtoi(fields[1], &status)) {
      finished[std::string(fields[0])] = status;
    }
  }
  return Journal(*std::move(log), std::move(finished), lines);
}

Journal::Journal(io::LockedLog log, std::map<std::string, int> finished, size_t lines)
    : log_(std::move(log)), finished_(std::move(finished)), lines_(lines) {}

std::optional<int> Journal::finished(const std::string& chunk) const {
  const auto it = finished_.find(chunk);
  if (it == finished_.end()) return std::nullopt;
  return it->second;
}

absl::Status Journal::record(const std::string& chunk, int status) {
  if (absl::Status s = log_.append(absl::StrCat(chunk, " ", status, "\n")); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), ": the journal entry for ", chunk));
  }
  finished_[chunk] = status;
  ++lines_;
  return absl::OkStatus();
}

absl::Status Journal::cut(const std::function<bool(const std::string&)>& wanted) {
  std::map<std::string, int> kept;
  std::string lines;
  for (auto& [chunk, status] : finished_) {
    if (!wanted(chunk)) continue;
    absl::StrAppend(&lines, chunk, " ", status, "\n");
    kept.emplace(chunk, status);
  }
  if (absl::Status s = log_.replace(lines); !s.ok()) return s;
  finished_ = std::move(kept);
  lines_ = kept_ = finished_.size();
  return absl::OkStatus();
}

}  // namespace pdfix::follow
