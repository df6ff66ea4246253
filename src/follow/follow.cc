#include "follow/follow.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "follow/chunk_watch.h"
#include "follow/journal.h"
#include "io/exit_status.h"
#include "io/output.h"
#include "llvm/Support/JSON.h"

namespace pdfix::follow {
namespace {

// A chunk's size: a file's, or the sum of a directory recording's files.
uint64_t size_of(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    const auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : n;
  }
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const auto n = std::filesystem::file_size(e.path(), ec);
    if (!ec) total += n;
  }
  return total;
}

absl::Status remove_chunk(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", ec.message()));
  return absl::OkStatus();
}

constexpr char kBundleSuffix[] = ".tar.zst";

// What a run killed by SIGKILL left in `dir`: a chunk's temporary output or bundle
// (io/output.h), unfinished. The journal's lock says no other run is writing there.
void remove_unfinished(const std::string& dir, const std::string& base, std::string_view suffix) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename();
    const size_t cut = name.rfind(".pdfix-");
    if (cut == std::string::npos || cut < 1 + suffix.size()) continue;
    const std::string file = name.substr(1, cut - 1);
    if (!file.ends_with(suffix)) continue;
    if (is_chunk_name(file.substr(0, file.size() - suffix.size()), base) &&
        name.starts_with(io::temp_prefix(file))) {
      std::filesystem::remove_all(e.path(), ec);
    }
  }
}

using Clock = std::chrono::steady_clock;

// A chunk not fixed is tried again at once after a later chunk is fixed (the space or the file
// that was missing may be back) this many times; after that only when its delay has passed.
constexpr int kTriesAfterAFix = 3;
constexpr double kLongestDelay = 3600;

class Run {
 public:
  Run(const FollowConfig& config, const FixChunk& fix,
      const std::function<void(llvm::json::Object)>& each, Journal journal)
      : config_(config), fix_(fix), each_(each), journal_(std::move(journal)) {}

  absl::Status take(const std::string& name);
  // Tries again the chunks not fixed whose time has come.
  absl::Status retry(const std::function<bool()>& stop_requested);
  // How long until the next chunk not fixed is due; nullopt: none is waiting.
  std::optional<std::chrono::milliseconds> next_retry() const;
  FollowSummary& summary() { return summary_; }
  size_t not_fixed() const { return waiting_.size(); }
  // Forgets the chunks no longer in DIR (`present`), in the journal and here, once the journal
  // wants it: a run of days keeps what its DIR holds, not every chunk it ever fixed.
  bool wants_to_forget() const { return journal_.wants_cut(); }
  absl::Status forget_gone(const std::vector<std::string>& present);

 private:
  absl::Status attempt(const std::string& name);
  absl::Status not_fixed(const std::string& name, llvm::json::Object report);

  struct Waiting {
    int tries = 0;
    Clock::time_point due;
  };
  const FollowConfig& config_;
  const FixChunk& fix_;
  const std::function<void(llvm::json::Object)>& each_;
  Journal journal_;
  // Chunks taken in this run: one listed at the start may also come as an event.
  std::set<std::string> taken_;
  // Chunks whose fix failed, still raw, to be tried again (never journalled: a restart tries
  // them too).
  std::map<std::string, Waiting> waiting_;
  bool fixed_since_a_failure_ = false;
  FollowSummary summary_;
};

absl::Status Run::take(const std::string& name) {
  if (!taken_.insert(name).second) {
    // Not fixed before, and written since (a copy listed at the start, closed at last): now.
    return waiting_.contains(name) ? attempt(name) : absl::OkStatus();
  }
  const std::string in = absl::StrCat(config_.dir, "/", name);
  // A failure journalled by an earlier pdfix (which did not try again) is tried again.
  if (const std::optional<int> done = journal_.finished(name); done && *done != kExitError) {
    ++summary_.earlier;
    // Killed after the journal's line and before the removal: the fixed copy is on disk.
    if (config_.remove_raw && access(in.c_str(), F_OK) == 0) return remove_chunk(in);
    return absl::OkStatus();
  }
  return attempt(name);
}

absl::Status Run::forget_gone(const std::vector<std::string>& present) {
  const std::set<std::string> there(present.begin(), present.end());
  if (absl::Status s = journal_.cut([&](const std::string& c) { return there.contains(c); });
      !s.ok()) {
    return s;
  }
  std::erase_if(taken_,
                [&](const std::string& c) { return !there.contains(c) && !waiting_.contains(c); });
  return absl::OkStatus();
}

absl::Status Run::retry(const std::function<bool()>& stop_requested) {
  const Clock::time_point now = Clock::now();
  std::vector<std::string> due;
  for (const auto& [name, w] : waiting_) {
    if (w.due <= now || (fixed_since_a_failure_ && w.tries < kTriesAfterAFix)) {
      due.push_back(name);
    }
  }
  fixed_since_a_failure_ = false;
  for (const std::string& name : due) {
    if (stop_requested()) break;
    if (absl::Status s = attempt(name); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::optional<std::chrono::milliseconds> Run::next_retry() const {
  if (waiting_.empty()) return std::nullopt;
  Clock::time_point first = Clock::time_point::max();
  for (const auto& [name, w] : waiting_) first = std::min(first, w.due);
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::ceil<std::chrono::milliseconds>(first - Clock::now()));
}

// A chunk whose fix failed: said, left raw and out of the journal, and given its next try.
absl::Status Run::not_fixed(const std::string& name, llvm::json::Object report) {
  Waiting& w = waiting_[name];
  ++w.tries;
  const double delay =
      std::min(kLongestDelay, config_.retry_after * std::pow(2.0, std::min(w.tries - 1, 20)));
  w.due = Clock::now() +
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
  report["tries"] = w.tries;
  const bool after_a_fix = w.tries < kTriesAfterAFix;
  report["note"] = absl::StrCat(
      "not fixed: kept as it was; tried again ", after_a_fix ? "once a later chunk is fixed, " : "",
      config_.once ? (after_a_fix ? "and at the next start" : "at the next start")
                   : absl::StrCat(after_a_fix ? "or " : "", absl::SixDigits(delay), " s from now"));
  each_(std::move(report));
  return absl::OkStatus();
}

absl::Status Run::attempt(const std::string& name) {
  const std::string in = absl::StrCat(config_.dir, "/", name);
  const std::string out = absl::StrCat(config_.out_dir, "/", name);
  llvm::json::Object report{{"chunk", name}, {"input", in}};
  int status = kExitOk;
  struct stat st;
  const std::string bundle = config_.bundle_dir.empty() ? "" : bundle_path(config_, name);
  if (lstat(out.c_str(), &st) == 0 && !bundle.empty() && lstat(bundle.c_str(), &st) != 0) {
    // Killed between the fixed chunk and its bundle: fixed again, bundle and all.
    if (absl::Status s = remove_chunk(out); !s.ok()) return s;
  }
  if (lstat(out.c_str(), &st) == 0) {
    // Written completely (outputs appear only so) by a run killed before its journal line.
    if (absl::Status s = sync_to_disk(out); !s.ok()) return s;
    report["output"] = out;
    report["note"] = "fixed by an earlier run that was stopped before it said so";
    ++summary_.earlier;
  } else if (lstat(in.c_str(), &st) != 0 && errno == ENOENT) {
    report["note"] = "removed before it could be fixed (perf record --switch-max-files?)";
    status = kExitError;
    ++summary_.gone;
  } else {
    const uint64_t bytes_in = size_of(in);
    const auto start = std::chrono::steady_clock::now();
    llvm::json::Object fixed;
    status = fix_(in, out, fixed);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report["status"] = status;
    report["seconds"] = seconds;
    report["bytes_in"] = bytes_in;
    summary_.seconds += seconds;
    summary_.bytes_in += bytes_in;
    if (status == kExitError) {
      if (const llvm::json::Value* error = fixed.get("error")) report["error"] = *error;
      return not_fixed(name, std::move(report));
    }
    if (absl::Status s = sync_to_disk(out); !s.ok()) return s;
    const uint64_t bytes_out = size_of(out);
    report["output"] = out;
    report["bytes_out"] = bytes_out;
    if (!bundle.empty()) {
      if (absl::Status s = sync_to_disk(bundle); !s.ok()) return s;
      const uint64_t bundled = size_of(bundle);
      report["bundle"] = bundle;
      report["bundle_bytes"] = bundled;
      summary_.bytes_bundled += bundled;
    }
    report["fix"] = std::move(fixed);
    summary_.bytes_out += bytes_out;
    ++(status == kExitOk ? summary_.fixed : summary_.incomplete);
  }
  if (const auto w = waiting_.find(name); w != waiting_.end()) {
    report["tries"] = w->second.tries + 1;
    waiting_.erase(w);
  }
  fixed_since_a_failure_ |= status != kExitError;
  if (absl::Status s = journal_.record(name, status); !s.ok()) return s;
  if (config_.remove_raw && status != kExitError) {
    if (absl::Status s = remove_chunk(in); !s.ok()) return s;
    report["raw_removed"] = true;
  }
  each_(std::move(report));
  return absl::OkStatus();
}

}  // namespace

std::string bundle_path(const FollowConfig& config, const std::string& name) {
  return absl::StrCat(config.bundle_dir, "/", name, kBundleSuffix);
}

absl::StatusOr<FollowSummary> follow(const FollowConfig& config, const FixChunk& fix,
                                     const std::function<void(llvm::json::Object)>& each,
                                     const std::function<void(const std::string&)>& notice) {
  auto journal = Journal::open(config.out_dir);
  if (!journal.ok()) return journal.status();
  remove_unfinished(config.out_dir, config.base, "");
  if (!config.bundle_dir.empty()) remove_unfinished(config.bundle_dir, config.base, kBundleSuffix);
  auto watch = ChunkWatch::open(config.dir, config.base);
  if (!watch.ok()) return watch.status();
  Run run(config, fix, each, std::move(*journal));
  const auto stop_requested = [&] { return (*watch)->stop_requested(); };
  auto names = (*watch)->present();
  while (names.ok()) {
    for (const std::string& other : (*watch)->chunks_of_other_bases()) {
      const std::string base(*chunk_base(other));
      if (notice) {
        notice(absl::StrCat(config.dir, " holds ", other, ", a chunk of ", base, ", not of ",
                            config.base, ": give --base ", base, " to follow those"));
      }
    }
    for (const std::string& name : *names) {
      if (stop_requested()) break;
      if (absl::Status s = run.take(name); !s.ok()) return s;
    }
    if (absl::Status s = run.retry(stop_requested); !s.ok()) return s;
    if (config.once || stop_requested()) break;
    names = (*watch)->wait(run.next_retry());
    // After a wait only: the first one also brings the events of chunks listed at the start,
    // which must still be known as taken.
    if (names.ok() && run.wants_to_forget()) {
      auto there = (*watch)->present();
      if (!there.ok()) return there.status();
      if (absl::Status s = run.forget_gone(*there); !s.ok()) return s;
    }
  }
  if (!names.ok()) return names.status();
  run.summary().failed = run.not_fixed();
  run.summary().stop_signal = (*watch)->stop_signal();
  return run.summary();
}

}  // namespace pdfix::follow
