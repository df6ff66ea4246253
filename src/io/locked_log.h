// A run's log of what it has finished, kept beside its outputs: an append-only file of lines,
// 0600, locked (flock) by the one run that writes it, each append synced to disk before it is
// taken as done. A crash may cut the last line short; it is ended on open, and the reader takes
// a line that does not parse as none. follow's journal and follow --archive's chain of bundles.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pdfix::io {

class LockedLog {
 public:
  // The log at `path` (made if there is none), locked. Held by another process: an error saying
  // `busy` (what holds it, in the user's words).
  static absl::StatusOr<LockedLog> open(const std::string& path, const std::string& busy);
  LockedLog(LockedLog&&) noexcept;
  LockedLog& operator=(LockedLog&&) = delete;
  ~LockedLog();

  // What the log held when it was opened.
  const std::string& text() const { return text_; }
  // Appends whole lines and syncs them to disk.
  absl::Status append(std::string_view lines);
  // Replaces the whole log with `lines` (a file beside it, synced and renamed over it, locked
  // before it takes the name): what keeps a log of a run of days to what is still wanted.
  absl::Status replace(std::string_view lines);

 private:
  LockedLog(int fd, std::string path, std::string text);
  int fd_;
  std::string path_;
  std::string text_;
};

}  // namespace pdfix::io
