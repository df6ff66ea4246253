// A copy here of a binary the recording names by build-id: the one search that archive, store and
// unwind take, where the file's own build-id is the proof (unlike a map's inode proof, it holds on
// any host and after any reboot). The places, in order: under --sysroot, or else
// resolve::places (the path; the map's overlay while mounted, and its layers; the root of the
// recorded process; each --search root), then the roots of the other processes that mapped it,
// every overlay mounted whole (a container's root, whose process may have exited), and the
// build-id caches. The kernel's symbols come from the running kernel when it has the id, the vdso
// from this process when it has the id, the kernel's ELF image from where distributions install
// it, and a debug file from resolve::find_debug_file's places.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/build_id.h"
#include "resolve/cache_layout.h"
#include "resolve/file_places.h"
#include "resolve/host.h"

namespace pdfix::resolve {

struct CopyQuery {
  std::string name;  // the path the recording names
  format::BuildId id;
  std::optional<Inode> inode;  // when a map record gave it: its overlay is looked in first
  std::vector<uint32_t> pids;  // processes that mapped it
  EntryKind kind = EntryKind::kElf;
};

struct CopyPlaces {
  std::string sysroot;  // a copy of the recording host's root; empty: this machine
  std::vector<std::string> search;
  std::vector<std::string> caches;      // perf's layout
  std::optional<int64_t> ended_at;      // of the recording: a process started since is another
  std::string debuginfod_client_cache;  // libdebuginfod's, for debug files it fetched before
  // The recording's kernel's kallsyms as the user gave it (export --kallsyms): no build-id
  // proves it, so it is taken only where no proven copy is here.
  std::string kallsyms;
};

struct FoundCopy {
  std::string path;
  std::string where;  // for people: "the mapped path", "/proc/42/root", "perf's build-id cache"
};

// Whether `cache` holds `id`'s file of `kind` where perf report reads it, proven by carrying the
// id; kallsyms, which is text, by the id its directory names. The one rule for a cache entry.
bool cache_holds(const std::string& cache, const format::BuildId& id, EntryKind kind);

// The first of `caches` that holds `id`'s file of `kind` (cache_holds), as that file's path: the
// one walk of the build-id caches, for binaries, modules, kallsyms, vdso images and debug files.
std::optional<std::string> in_caches(std::span<const std::string> caches, const format::BuildId& id,
                                     EntryKind kind);

// The first place that holds a file (a module: compressed or not) whose build-id is `q.id`.
std::optional<FoundCopy> find_copy(const Host& host, const CopyQuery& q, const CopyPlaces& places);

// What a bundle or a cache keeps for one binary named by build-id, of any kind.
struct Copy {
  enum class From { kNothing, kFile, kKallsyms, kVdso };
  From from = From::kNothing;
  std::string path;      // kFile: the file (a module may be compressed)
  std::string evidence;  // how it was proven
  std::string missing;   // kNothing: why
};
// `q` of kind kElf as find_copy finds it; kKallsyms: the running kernel's /proc/kallsyms when it
// has the id (and shows addresses), else a cache's, else the one the user gave; kVdso: this
// process's vdso when it has the id, else a cache's. kVmlinux and kDebug are found from their
// binary (below).
Copy copy_of(const Host& host, const CopyQuery& q, const CopyPlaces& places);

// The ELF image of the kernel of build-id `id` and release `release` (the recording's): where
// distributions install it (resolve::vmlinux_paths) under each of resolve::copy_roots, else in the
// build-id caches; proven by carrying the id.
std::optional<Copy> vmlinux_of(const format::BuildId& id, std::string_view release,
                               const CopyPlaces& places);

// This process's vdso, if the running kernel's vdso is the one of build-id `id`; empty if not.
std::span<const uint8_t> vdso_with_id(const Host& host, const format::BuildId& id);

}  // namespace pdfix::resolve
