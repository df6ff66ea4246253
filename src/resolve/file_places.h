// Where this machine shows the file a map record names, and whether the file found there is the
// one that was mapped. Every consumer that proves a map's file by its inode (the resolver, inject-
// jit's dumps) takes its places from here, in this one order, and judges each file by `match`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolve/host.h"

namespace pdfix::resolve {

// A file as the kernel names it in a map record: its device and inode number.
struct Inode {
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  auto operator<=>(const Inode&) const = default;
};

enum class PlaceKind {
  kPath,          // this host's file at the path
  kOverlay,       // the map's overlay, mounted whole, seen at its mount point
  kOverlayLayer,  // one of that overlay's layers (upper first)
  kProcessRoot,   // /proc/PID/root of the recorded process while it lives
  kSearch,        // a --search root: a container's rootfs, a chroot, an image layer
  kSysroot,       // --sysroot: a copy of the recording host's root
  kAnyOverlay,    // an overlay mounted now that may not be the map's (a copy is proven by its id)
};

struct Place {
  std::string root;  // prefixed to the recorded path; "" for kPath
  PlaceKind kind;
  std::string source;  // for people: "the mounted overlay at /var/lib/…/merged"
  // A layer stands for an overlay: the map carries the overlay's device, the layer file its own.
  bool layer() const { return kind == PlaceKind::kOverlayLayer || kind == PlaceKind::kSearch; }
};

// Every place the file mapped as `inode` by `pid` (0: no process to look into) may be seen from
// here, in order: the path itself; the map's overlay while mounted, whole, then each layer; the
// process's root, if the process living under `pid` started before the recording ended
// (`ended_at`); each root of `search`.
std::vector<Place> places(const Host& host, const Inode& inode, uint32_t pid,
                          std::span<const std::string> search, std::optional<int64_t> ended_at);

// The roots under which a copy of the recording host's files, proven by its build-id, may be seen
// from here, in order: --sysroot (the recording host's own root, `sysroot`) or else this host's,
// then each root of `search`.
std::vector<Place> copy_roots(const std::string& sysroot, std::span<const std::string> search);

// Where a copy of the file a recording names at `path`, proven by the build-id it must carry and
// not by its inode, may be seen from here, in order, each given to `take` until it takes one
// (returns true; then so does this). With a sysroot: under it, then under each root of `search`.
// Else: `places` of the first process of `pids` (those whose maps name it), the root of each
// other, then every overlay mounted now. Nothing for a name that is not a path. Later places are
// looked up only when asked for: a library of a system-wide recording has hundreds of processes.
bool find_in_copy_places(const Host& host, const std::string& path,
                         const std::optional<Inode>& inode, std::span<const uint32_t> pids,
                         std::span<const std::string> search, const std::string& sysroot,
                         std::optional<int64_t> ended_at,
                         const std::function<bool(const Place&)>& take);

enum class Match {
  kMissing,       // no regular file there
  kTheMapped,     // the inode mapped, unchanged since the recording ended
  kAnotherInode,  // another file
  kStale,         // the inode mapped (or, with no inode, the file), written after the recording
  kNoInode,       // a file, unchanged since; the map gave no inode to tell whether it is the one
};
std::string_view name(Match m);

// What `match` saw of a file: the verdict and, for another inode, what tells why.
struct Sighting {
  Match verdict = Match::kMissing;
  bool same_device = false;  // on the map's device: replaced in place, or a chroot's file
  int64_t changed_at = 0;    // its ctime (nanoseconds since the epoch): when it was made so, or
                             // written or linked last
  bool operator==(Match m) const { return verdict == m; }
};

// Whether `file`, seen at `place`, is the inode mapped: the one comparison of device and inode,
// and the one rule of "not written since the recording began": a file written after
// `started_at`, or after `ended_at` (the second of it), is kStale (nullopt: not asked), for a
// process may have mapped it before it was rewritten in place (a linker writes its output so, as
// do cp and install into an existing file): one inode, two contents. The
// device must agree too, except where overlayfs stands between: a map of an overlay's file
// carries the layer file's inode number with the overlay's device (6.x kernels) or the layer's
// (older ones). Without `inode` (an MMAP record) only whether a file is there, and unchanged.
Sighting match(const Host& host, const std::string& file, const Place& place,
               const std::optional<Inode>& inode, std::optional<int64_t> started_at,
               std::optional<int64_t> ended_at);

// A file as stat(2) sees it: equal stamps are the same file, unchanged since (what a run may
// remember of a file it read holds while the stamp does).
struct FileStamp {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
// nullopt: no regular file at `path`.
std::optional<FileStamp> stamp_of(const std::string& path);

}  // namespace pdfix::resolve
