// perf's build-id cache, as perf 4.x to 6.x lay it out (and `perf report` looks it up):
//
//   <cache>/<dso name>/<id>/elf            a file, its path without the leading '/'
//   <cache>/<dso name>/<id>/debug          its separate debug info
//   <cache>/[kernel.kallsyms]/<id>/kallsyms
//   <cache>/[vdso]/<id>/vdso
//   <cache>/[kernel.kallsyms]/<id>/vmlinux  (pdfix's addition, when a vmlinux is proven)
//   <cache>/.build-id/<id[0:2]>/<id[2:]> -> ../../<dso name>/<id>
//
// The same tree is the `.debug` directory of a bundle.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "format/build_id.h"

namespace pdfix::resolve {

enum class EntryKind {
  kElf,       // an ELF file: program, library, module, or a vmlinux
  kKallsyms,  // the kernel's /proc/kallsyms
  kVdso,      // the vdso image
  kDebug,     // a separate debug-info file (as debuginfod serves it)
  kVmlinux,   // the kernel's ELF image beside its kallsyms: for `perf report --vmlinux` and
              // debuginfod, since perf looks up only kallsyms for the kernel's id
};

// Paths relative to the cache's root.
struct CacheEntry {
  std::string dir;          // "usr/lib/libc.so.6/<id>"
  std::string file;         // dir + "/elf"
  std::string link;         // ".build-id/ab/cdef..."
  std::string link_target;  // "../../" + dir
};

// Where `name`'s file of build-id `id` goes. nullopt for a name that cannot be a path inside the
// cache: empty, or with a "." or ".." component (the name comes from the recording, which must
// not choose where pdfix writes).
std::optional<CacheEntry> cache_entry(std::string_view name, const format::BuildId& id,
                                      EntryKind kind);

// The file perf report would read for `id` in `cache`: the link's directory and `kind`'s file.
std::string cached_file(const std::string& cache, const format::BuildId& id, EntryKind kind);

// The cache entry kind of a DSO name: the kernel's is kallsyms, the vdso's the vdso image.
EntryKind entry_kind_of(std::string_view name);

// The directory of a cache's links by build-id (<cache>/.build-id/<id[0:2]>/<id[2:]>).
inline constexpr char kBuildIdLinks[] = ".build-id";

// Where distributions put the debug file of build-id `id` (Debian's -dbg and dbgsym packages,
// Fedora's debuginfo, and `perf report --symfs` looks there): /usr/lib/debug/.build-id/<id[0:2]>/
// <id[2:]>.debug, under a root.
std::string distribution_debug_file(const format::BuildId& id);

}  // namespace pdfix::resolve
