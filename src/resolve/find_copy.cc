#include "resolve/find_copy.h"

#include <sys/stat.h>

#include "resolve/cache_layout.h"
#include "resolve/elf_build_id.h"
#include "resolve/kernel_files.h"

namespace pdfix::resolve {
namespace {

bool is_regular(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

bool cache_holds(const std::string& cache, const format::BuildId& id, EntryKind kind) {
  const std::string path = cached_file(cache, id, kind);
  return kind == EntryKind::kKallsyms ? is_regular(path) : carries_build_id(path, id);
}

std::optional<std::string> in_caches(std::span<const std::string> caches, const format::BuildId& id,
                                     EntryKind kind) {
  for (const std::string& cache : caches) {
    if (cache_holds(cache, id, kind)) return cached_file(cache, id, kind);
  }
  return std::nullopt;
}

std::optional<FoundCopy> find_copy(const Host& host, const CopyQuery& q, const CopyPlaces& places) {
  std::optional<FoundCopy> found;
  if (find_in_copy_places(host, q.name, q.inode, q.pids, places.search, places.sysroot,
                          places.ended_at, [&](const Place& p) {
                            std::string path = p.root + q.name;
                            if (!carries_build_id(path, q.id)) return false;
                            found = FoundCopy{std::move(path), p.source};
                            return true;
                          })) {
    return found;
  }
  if (auto cached = in_caches(places.caches, q.id, EntryKind::kElf)) {
    return FoundCopy{*std::move(cached), "perf's build-id cache"};
  }
  return std::nullopt;
}

Copy copy_of(const Host& host, const CopyQuery& q, const CopyPlaces& places) {
  const auto from_cache = [&](Copy& c) {
    std::optional<std::string> cached = in_caches(places.caches, q.id, q.kind);
    if (!cached) return false;
    c = {Copy::From::kFile, *std::move(cached), "perf's build-id cache", ""};
    return true;
  };
  Copy c;
  if (q.kind == EntryKind::kKallsyms) {
    const bool running = places.sysroot.empty() && host.kernel_build_id() == q.id;
    // _text at a real address: kallsyms shows addresses (root, or kptr_restrict 0).
    if (running && host.kernel_text()) {
      return {Copy::From::kKallsyms, "", "/proc/kallsyms (the running kernel has this id)", ""};
    }
    if (from_cache(c)) return c;
    if (!places.kallsyms.empty()) {
      return {Copy::From::kFile, places.kallsyms, "--kallsyms (given: no build-id proves it)", ""};
    }
    c.missing = running ? "/proc/kallsyms shows no addresses (kptr_restrict; run as root)"
                        : "not the running kernel; not in the build-id cache (--kallsyms FILE)";
    return c;
  }
  if (q.kind == EntryKind::kVdso) {
    if (places.sysroot.empty() && !vdso_with_id(host, q.id).empty()) {
      return {Copy::From::kVdso, "", "this process's vdso", ""};
    }
    if (from_cache(c)) return c;
    c.missing = "not this kernel's vdso; not in the build-id cache";
    return c;
  }
  if (auto found = find_copy(host, q, places)) {
    return {Copy::From::kFile, found->path, found->where, ""};
  }
  const std::string where = places.sysroot + q.name;
  c.missing = !is_regular(where) ? "no such file; not in the build-id cache"
              : places.sysroot.empty()
                  ? "another file than this host's at that path (a container's or chroot's, or "
                    "one replaced since): give its root or layers with --search; not in the "
                    "build-id cache"
                  : "the file there has another build-id; not in the build-id cache";
  return c;
}

std::optional<Copy> vmlinux_of(const format::BuildId& id, std::string_view release,
                               const CopyPlaces& places) {
  if (!release.empty()) {
    for (const Place& root : copy_roots(places.sysroot, places.search)) {
      for (const std::string& p : vmlinux_paths(release)) {
        const std::string path = root.root + p;
        if (carries_build_id(path, id)) {
          return Copy{Copy::From::kFile, path, "its build-id, " + root.source, ""};
        }
      }
    }
  }
  if (auto cached = in_caches(places.caches, id, EntryKind::kVmlinux)) {
    return Copy{Copy::From::kFile, *std::move(cached), "perf's build-id cache", ""};
  }
  return std::nullopt;
}

std::span<const uint8_t> vdso_with_id(const Host& host, const format::BuildId& id) {
  const std::span<const uint8_t> image = host.vdso();
  return carries_build_id(image, id) ? image : std::span<const uint8_t>{};
}

}  // namespace pdfix::resolve
