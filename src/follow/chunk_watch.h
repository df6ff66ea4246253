// The finished chunks of an always-on recording. `perf record --switch-output` (and `perf daemon`)
// writes BASE, and at each switch finishes its header and renames it BASE.<timestamp>
// (perf_data__switch), then starts a new BASE; with --threads BASE is a directory, renamed the
// same way. A chunk is taken by that final name only: the file perf is still writing never has it.
// Watched with inotify; SIGINT and SIGTERM are read here too (signalfd), so that a stop request
// ends a wait rather than the process, and the chunk under way is finished first.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace pdfix::follow {

// BASE.<digits>: what perf names a finished chunk of BASE.
bool is_chunk_name(std::string_view name, std::string_view base);
// The BASE of a name perf gives a chunk (BASE.<timestamp>: 14 digits or more); nullopt for another
// name.
std::optional<std::string_view> chunk_base(std::string_view name);

class ChunkWatch {
 public:
  // Blocks SIGINT and SIGTERM for this thread and the threads it starts (they are read from the
  // watch) and starts watching `dir` before anything in it is listed, so no chunk falls between.
  static absl::StatusOr<std::unique_ptr<ChunkWatch>> open(const std::string& dir,
                                                          const std::string& base);
  ~ChunkWatch();
  ChunkWatch(const ChunkWatch&) = delete;
  ChunkWatch& operator=(const ChunkWatch&) = delete;

  // The chunks in the directory now, oldest first (perf's timestamps sort as text).
  absl::StatusOr<std::vector<std::string>> present();
  // Waits until chunks arrive, and returns their names in the order they came; returns none once
  // a stop signal came (stop_signal() then names it), once `timeout` passed, or once a chunk of
  // another base came (chunks_of_other_bases()).
  absl::StatusOr<std::vector<std::string>> wait(
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Whether a stop signal is waiting, without blocking: checked between chunks.
  bool stop_requested();
  int stop_signal() const { return stop_signal_; }
  // A chunk of each other base seen in the directory since the last call (one a base, ever): what
  // a run started with the wrong --base waits beside.
  std::vector<std::string> chunks_of_other_bases();

 private:
  ChunkWatch(std::string dir, std::string base, int inotify, int signals);
  bool read_signal();
  void see(std::string_view name);

  std::string dir_;
  std::string base_;
  int inotify_;
  int signals_;
  int stop_signal_ = 0;
  std::set<std::string, std::less<>> other_bases_;
  std::vector<std::string> other_chunks_;  // not yet told
};

}  // namespace pdfix::follow
