#include "follow/chunk_watch.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pdfix::follow {
namespace {

absl::Status errno_error(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

}  // namespace

bool is_chunk_name(std::string_view name, std::string_view base) {
  if (!name.starts_with(base) || name.size() < base.size() + 2) return false;
  if (name[base.size()] != '.') return false;
  const std::string_view stamp = name.substr(base.size() + 1);
  return std::all_of(stamp.begin(), stamp.end(), [](char c) { return absl::ascii_isdigit(c); });
}

std::optional<std::string_view> chunk_base(std::string_view name) {
  // perf_data__switch's timestamp: %Y%m%d%H%M%S and hundredths.
  constexpr size_t kShortestStamp = 14;
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || name.size() - dot - 1 < kShortestStamp) {
    return std::nullopt;
  }
  const std::string_view stamp = name.substr(dot + 1);
  if (!std::all_of(stamp.begin(), stamp.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return std::nullopt;
  }
  return name.substr(0, dot);
}

absl::StatusOr<std::unique_ptr<ChunkWatch>> ChunkWatch::open(const std::string& dir,
                                                             const std::string& base) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &stop, nullptr) != 0) return errno_error("pthread_sigmask");
  const int signals = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) return errno_error("signalfd");
  const int inotify = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify < 0) {
    close(signals);
    return errno_error("inotify_init1");
  }
  // perf renames a finished chunk into place; a chunk copied in is whole when closed after
  // writing.
  if (inotify_add_watch(inotify, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) < 0) {
    absl::Status error = errno_error(absl::StrCat("cannot watch ", dir));
    close(inotify);
    close(signals);
    return error;
  }
  return std::unique_ptr<ChunkWatch>(new ChunkWatch(dir, base, inotify, signals));
}

ChunkWatch::ChunkWatch(std::string dir, std::string base, int inotify, int signals)
    : dir_(std::move(dir)), base_(std::move(base)), inotify_(inotify), signals_(signals) {}

ChunkWatch::~ChunkWatch() {
  close(inotify_);
  close(signals_);
}

absl::StatusOr<std::vector<std::string>> ChunkWatch::present() {
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return errno_error(absl::StrCat("cannot list ", dir_));
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    if (is_chunk_name(e->d_name, base_)) names.emplace_back(e->d_name);
    see(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool ChunkWatch::read_signal() {
  signalfd_siginfo info;
  if (read(signals_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    stop_signal_ = static_cast<int>(info.ssi_signo);
  }
  return stop_signal_ != 0;
}

void ChunkWatch::see(std::string_view name) {
  const std::optional<std::string_view> base = chunk_base(name);
  // A dot-file is a temporary (pdfix's, rsync's), not a chunk.
  if (!base || *base == base_ || name.starts_with('.')) return;
  if (other_bases_.emplace(*base).second) other_chunks_.emplace_back(name);
}

std::vector<std::string> ChunkWatch::chunks_of_other_bases() {
  return std::exchange(other_chunks_, {});
}

bool ChunkWatch::stop_requested() { return stop_signal_ != 0 || read_signal(); }

absl::StatusOr<std::vector<std::string>> ChunkWatch::wait(
    std::optional<std::chrono::milliseconds> timeout) {
  std::vector<std::string> names;
  const auto until =
      std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
  while (names.empty() && other_chunks_.empty() && !stop_requested()) {
    int wait_ms = -1;
    if (timeout) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
    }
    pollfd fds[] = {{inotify_, POLLIN, 0}, {signals_, POLLIN, 0}};
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return errno_error("poll");
    }
    if (ready == 0) continue;
    alignas(inotify_event) char buffer[16384];
    const ssize_t n = read(inotify_, buffer, sizeof buffer);
    if (n < 0 && errno != EAGAIN) return errno_error("reading inotify events");
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      if (e->mask & IN_Q_OVERFLOW) {
        // Events were dropped: the directory itself says what is there.
        auto all = present();
        if (!all.ok()) return all.status();
        names.insert(names.end(), all->begin(), all->end());
      } else if (e->len > 0 && is_chunk_name(e->name, base_)) {
        names.emplace_back(e->name);
      } else if (e->len > 0) {
        see(e->name);
      }
    }
  }
  return names;
}

}  // namespace pdfix::follow
