#include "resolve/file_places.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "absl/strings/str_cat.h"

namespace pdfix::resolve {

std::vector<Place> places(const Host& host, const Inode& inode, uint32_t pid,
                          std::span<const std::string> search, std::optional<int64_t> ended_at) {
  std::vector<Place> out{{"", PlaceKind::kPath, "file"}};
  // An overlay still mounted shows its files, those of processes long gone included; its layers
  // keep a file the merged view no longer shows (replaced inside the container).
  if (const auto mount = host.mount(inode.maj, inode.min); mount && mount->type == "overlay") {
    if (mount->root == "/") {
      out.push_back({mount->point, PlaceKind::kOverlay, "the mounted overlay at " + mount->point});
    }
    for (const std::string& layer : mount->layers) {
      out.push_back({layer, PlaceKind::kOverlayLayer, "the overlay's layer " + layer});
    }
  }
  if (pid != 0) {
    if (auto p = recorded_process(host, pid, ended_at)) {
      out.push_back({p->root, PlaceKind::kProcessRoot, absl::StrCat("/proc/", pid, "/root")});
    }
  }
  for (const std::string& root : search) {
    out.push_back({root, PlaceKind::kSearch, "--search " + root});
  }
  return out;
}

std::vector<Place> copy_roots(const std::string& sysroot, std::span<const std::string> search) {
  std::vector<Place> out;
  if (sysroot.empty()) {
    out.push_back({"", PlaceKind::kPath, "this host's file at the path"});
  } else {
    out.push_back({sysroot, PlaceKind::kSysroot, "under --sysroot"});
  }
  for (const std::string& root : search) {
    out.push_back({root, PlaceKind::kSearch, "under --search " + root});
  }
  return out;
}

bool find_in_copy_places(const Host& host, const std::string& path,
                         const std::optional<Inode>& inode, std::span<const uint32_t> pids,
                         std::span<const std::string> search, const std::string& sysroot,
                         std::optional<int64_t> ended_at,
                         const std::function<bool(const Place&)>& take) {
  if (path.empty() || path.front() != '/') return false;
  if (!sysroot.empty()) {
    for (const Place& p : copy_roots(sysroot, search)) {
      if (take(p)) return true;
    }
    return false;
  }
  // The map's own overlay is known only from its device; without one, no overlay is the map's.
  std::vector<Place> own =
      places(host, inode.value_or(Inode{}), pids.empty() ? 0 : pids.front(), search, ended_at);
  own.front().source = "the mapped path";
  for (const Place& p : own) {
    if (take(p)) return true;
  }
  for (size_t i = 1; i < pids.size(); ++i) {
    if (auto p = recorded_process(host, pids[i], ended_at)) {
      if (take({p->root, PlaceKind::kProcessRoot, absl::StrCat("/proc/", pids[i], "/root")})) {
        return true;
      }
    }
  }
  for (const Mount& m : host.overlays()) {
    if (take({m.point, PlaceKind::kAnyOverlay, "the mounted overlay at " + m.point})) return true;
  }
  return false;
}

std::string_view name(Match m) {
  switch (m) {
    case Match::kMissing:
      return "not found";
    case Match::kTheMapped:
      return "the inode mapped";
    case Match::kAnotherInode:
      return "another inode";
    case Match::kStale:
      return "stale (modified after the recording began)";
    case Match::kNoInode:
      return "a file, with no inode to prove it the one mapped";
  }
  return "";
}

Sighting match(const Host& host, const std::string& file, const Place& place,
               const std::optional<Inode>& inode, std::optional<int64_t> started_at,
               std::optional<int64_t> ended_at) {
  struct stat st{};
  if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  const int64_t written = st.st_mtim.tv_sec * int64_t{1'000'000'000} + st.st_mtim.tv_nsec;
  const int64_t changed = st.st_ctim.tv_sec * int64_t{1'000'000'000} + st.st_ctim.tv_nsec;
  const bool stale = (ended_at && st.st_mtim.tv_sec > *ended_at / 1'000'000'000) ||
                     (started_at && written > *started_at);
  if (!inode) return {stale ? Match::kStale : Match::kNoInode, false, changed};
  const bool same_device = major(st.st_dev) == inode->maj && minor(st.st_dev) == inode->min;
  bool device_may_differ = false;
  if (place.kind != PlaceKind::kPath && !same_device) {
    // Seen through an overlay, a file shows the overlay's device; a searched layer may stand for
    // a map whose device is an overlay's, mounted or (anonymous, unmounted) gone. Everywhere else
    // the device must agree: inode numbers repeat across filesystems (every btrfs subvolume
    // starts at 256).
    struct statfs fs{};
    device_may_differ = statfs(file.c_str(), &fs) == 0 && fs.f_type == OVERLAYFS_SUPER_MAGIC;
    if (!device_may_differ && place.layer() && inode->maj == 0) {
      const std::optional<Mount> mount = host.mount(inode->maj, inode->min);
      device_may_differ = !mount || mount->type == "overlay";
    }
  }
  if (st.st_ino != inode->ino || (!same_device && !device_may_differ)) {
    return {Match::kAnotherInode, same_device, changed};
  }
  return {stale ? Match::kStale : Match::kTheMapped, same_device, changed};
}

std::optional<FileStamp> stamp_of(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  constexpr int64_t kNanos = 1'000'000'000;
  return FileStamp{st.st_dev, st.st_ino, st.st_size,
                   st.st_mtim.tv_sec * kNanos + st.st_mtim.tv_nsec,
                   st.st_ctim.tv_sec * kNanos + st.st_ctim.tv_nsec};
}

}  // namespace pdfix::resolve
