// The always-on run: each chunk of `perf record --switch-output` fixed once, as soon as perf has
// finished it, while the processes it maps still live. The watcher (chunk_watch.h) says when a
// chunk is finished, the journal (journal.h) what was done before a restart; the fix itself is the
// caller's (cli: the same run as `pdfix fix`), so that there is one pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
}  // namespace llvm::json

namespace pdfix::follow {

struct FollowConfig {
  std::string dir;                 // where perf writes its chunks
  std::string base = "perf.data";  // perf's -o name: chunks are BASE.<timestamp>
  std::string out_dir;             // where each fixed chunk goes, under the chunk's name
  bool remove_raw = false;         // remove a chunk once its fixed copy is on disk
  bool once = false;               // the chunks there now, then stop: a backlog
  // Where each chunk's bundle goes (--archive), at bundle_path(); empty: no bundles. A chunk is
  // done only when its bundle is there too.
  std::string bundle_dir;
  // A chunk not fixed (no space left, a file it needs unreadable) stays raw and is tried again:
  // at once after a later chunk is fixed (its first three times), else this many seconds after
  // it failed, the delay doubled each time up to an hour; and at the next start.
  double retry_after = 30;
};

// The bundle of chunk `name`: BUNDLE_DIR/NAME.tar.zst.
std::string bundle_path(const FollowConfig& config, const std::string& name);

// Fixes the recording at `in` into `out`, filling `report`; returns the exit status (0 done, 3 done
// but incomplete, 2 not done: nothing written, and the report's `error` says why).
using FixChunk =
    std::function<int(const std::string& in, const std::string& out, llvm::json::Object& report)>;

struct FollowSummary {
  uint64_t fixed = 0;       // exit 0
  uint64_t incomplete = 0;  // exit 3: written, but not all there
  uint64_t failed = 0;      // exit 2 at its last try: kept as it was, tried at the next start
  uint64_t gone = 0;        // removed (by perf --switch-max-files) before it could be fixed
  uint64_t earlier = 0;     // finished by an earlier run (the journal)
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t bytes_bundled = 0;  // the chunks' bundles
  double seconds = 0;          // spent fixing
  int stop_signal = 0;         // what ended the run, when a signal did
};

// Runs until a stop signal (or, with `once`, until the chunks present are done). `each` is told
// of every chunk finished, as one JSON object; `notice`, once a base, of chunks in the directory
// that another --base names (a run that would otherwise wait beside them in silence). An error
// is the run's own (the directory cannot be watched, the journal cannot be written); a chunk's is
// in its report.
absl::StatusOr<FollowSummary> follow(const FollowConfig& config, const FixChunk& fix,
                                     const std::function<void(llvm::json::Object)>& each,
                                     const std::function<void(const std::string&)>& notice = {});

}  // namespace pdfix::follow
