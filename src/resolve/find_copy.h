// A copy here of a binary the recording names by build-id: the one search that archive, store and
// unwind take, where the file's own build-id is the proof (unlike a map's inode proof, it holds on
// any host and after any reboot). The places, in order: under --sysroot, or else
// resolve::places (the path; the map's overlay while mounted, and its layers; the root of the
// recorded process; each --search root), then the roots of the other processes that mapped it,
// every overlay mounted whole (a container's root, whose process may have exited), and the
// build-id caches. Also the one list of where a kernel's vmlinux is installed, and the one proof
// of the vdso.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/build_id.h"
#include "resolve/file_places.h"
#include "resolve/host.h"

namespace pdfix::resolve {

struct CopyQuery {
  std::string name;  // the path the recording names
  format::BuildId id;
  std::optional<Inode> inode;  // when a map record gave it: its overlay is looked in first
  std::vector<uint32_t> pids;  // processes that mapped it
};

struct CopyPlaces {
  std::string sysroot;  // a copy of the recording host's root; empty: this machine
  std::vector<std::string> search;
  std::vector<std::string> caches;  // perf's layout
  std::optional<int64_t> ended_at;  // of the recording: a process started since is another
};

struct FoundCopy {
  std::string path;
  std::string where;  // for people: "the mapped path", "/proc/42/root", "perf's build-id cache"
};

// The first place that holds a file (a module: compressed or not) whose build-id is `q.id`.
std::optional<FoundCopy> find_copy(const Host& host, const CopyQuery& q, const CopyPlaces& places);

// Where distributions install the ELF image of kernel `release`, most specific first.
std::vector<std::string> vmlinux_paths(std::string_view release);

// This process's vdso, if the running kernel's vdso is the one of build-id `id`; empty if not.
std::span<const uint8_t> vdso_with_id(const Host& host, const format::BuildId& id);

}  // namespace pdfix::resolve
