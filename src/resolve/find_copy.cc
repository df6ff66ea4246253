#include "resolve/find_copy.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "resolve/cache_layout.h"
#include "resolve/elf_build_id.h"

namespace pdfix::resolve {
namespace {

bool has_id(const std::string& path, const format::BuildId& id) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto image = read_maybe_compressed(path);
  if (!image.ok()) return false;
  auto got = build_id_of_elf(
      {reinterpret_cast<const uint8_t*>((*image)->getBufferStart()), (*image)->getBufferSize()});
  return got.ok() && got->has_value() && **got == id;
}

}  // namespace

std::optional<FoundCopy> find_copy(const Host& host, const CopyQuery& q, const CopyPlaces& places) {
  std::optional<FoundCopy> found;
  const auto at = [&](std::string path, std::string where) {
    if (!found && has_id(path, q.id)) found = FoundCopy{std::move(path), std::move(where)};
    return found.has_value();
  };
  const bool path = !q.name.empty() && q.name.front() == '/';
  if (path && !places.sysroot.empty()) {
    if (at(places.sysroot + q.name, "under --sysroot")) return found;
    for (const std::string& root : places.search) {
      if (at(root + q.name, "under --search " + root)) return found;
    }
  } else if (path) {
    // The map's own overlay is known only from its device; without one, no overlay is the map's.
    const Inode inode = q.inode.value_or(Inode{});
    for (const Place& p : resolve::places(host, inode, q.pids.empty() ? 0 : q.pids.front(),
                                          places.search, places.ended_at)) {
      if (at(p.root + q.name, p.kind == PlaceKind::kPath ? "the mapped path" : p.source)) {
        return found;
      }
    }
    for (size_t i = 1; i < q.pids.size(); ++i) {
      auto proc = recorded_process(host, q.pids[i], places.ended_at);
      if (proc && at(proc->root + q.name, absl::StrCat("/proc/", q.pids[i], "/root"))) {
        return found;
      }
    }
    for (const Mount& m : host.overlays()) {
      if (at(m.point + q.name, "the mounted overlay at " + m.point)) return found;
    }
  }
  for (const std::string& cache : places.caches) {
    if (at(cached_file(cache, q.id, EntryKind::kElf), "perf's build-id cache")) return found;
  }
  return found;
}

std::vector<std::string> vmlinux_paths(std::string_view release) {
  const std::string r(release);
  return {absl::StrCat("/usr/lib/debug/boot/vmlinux-", r),
          absl::StrCat("/usr/lib/debug/lib/modules/", r, "/vmlinux"),
          absl::StrCat("/boot/vmlinux-", r), absl::StrCat("/lib/modules/", r, "/build/vmlinux")};
}

std::span<const uint8_t> vdso_with_id(const Host& host, const format::BuildId& id) {
  const std::span<const uint8_t> image = host.vdso();
  if (image.empty()) return {};
  auto got = build_id_of_elf(image);
  return got.ok() && got->has_value() && **got == id ? image : std::span<const uint8_t>{};
}

}  // namespace pdfix::resolve
