// What a follow run has finished, kept in its output directory so that pdfix killed at any point
// and started again fixes no chunk twice and skips none. A chunk is written to the journal only
// once its fixed copy is complete and on disk; a restart that finds a chunk's fixed copy but no
// line for it (killed between the two) takes it as done. One line a chunk: its name and the exit
// status its fix had (2 only for a chunk gone before it could be fixed). A chunk not fixed is not
// written: a restart tries it again, as it does one that an earlier pdfix wrote with 2.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/locked_log.h"

namespace pdfix::follow {

class Journal {
 public:
  // The journal of output directory `dir` (made if there is none yet), held locked: one run an
  // output directory.
  static absl::StatusOr<Journal> open(const std::string& dir);

  // The exit status the chunk's fix had; nullopt when it has not been finished.
  std::optional<int> finished(const std::string& chunk) const;
  // Appends the chunk and syncs the journal to disk.
  absl::Status record(const std::string& chunk, int status);
  size_t size() const { return finished_.size(); }
  // Whether the journal has grown enough since it was last cut to be cut again: by half its lines
  // and by kLinesBeforeACut at least, so that a cut's cost is spread over the lines it saves.
  bool wants_cut() const { return lines_ >= std::max(kLinesBeforeACut, 2 * kept_); }
  // Forgets every chunk but those `wanted` says are still there to be asked about (in DIR): a
  // chunk perf or --remove-raw removed is never taken again. The file is rewritten to match, so
  // the journal of a run of days stays the size of DIR's listing.
  absl::Status cut(const std::function<bool(const std::string&)>& wanted);

  static constexpr size_t kLinesBeforeACut = 256;

  static constexpr char kName[] = ".pdfix-follow-journal";

 private:
  Journal(io::LockedLog log, std::map<std::string, int> finished, size_t lines);
  io::LockedLog log_;
  std::map<std::string, int> finished_;
  size_t lines_;     // in the file
  size_t kept_ = 0;  // by the last cut
};

// Syncs a finished file and the directory entry that names it, so that a crash after this leaves
// it whole at its name: what must hold before the raw chunk it was made from is removed.
absl::Status sync_to_disk(const std::string& path);

}  // namespace pdfix::follow
