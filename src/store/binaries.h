// The binaries a recording's build-ids name, and for each a copy proven to be that binary: a file
// whose own build-id is the one named (the mapped path, under --sysroot or on this machine, under
// --search, under a living process's root or a mounted container's overlay, or in perf's build-id
// cache), the running kernel's kallsyms when the running kernel has the id, this
// process's vdso when it has the id. Nothing else: a missing binary is listed with the reason, a
// wrong one would mislead every later analysis.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/build_id.h"
#include "io/input.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/cache_layout.h"
#include "resolve/host.h"
#include "resolve/recorded_dsos.h"

namespace pdfix::store {

// perf's build-id cache layout is resolve's (the resolver reads the cache too); store writes it.
using resolve::cache_entry;
using resolve::cached_file;
using resolve::CacheEntry;
using resolve::entry_kind_of;
using resolve::EntryKind;

struct Binary {
  format::BuildId id;
  std::string name;  // the DSO's name in the recording
  EntryKind kind = EntryKind::kElf;
  bool guest = false;  // of a guest machine: its files are not on this host
  // Where a proven copy is; empty when there is none (then `missing` says why).
  enum class From { kNothing, kFile, kKallsyms, kVdso };
  From from = From::kNothing;
  std::string path;      // kFile: the file (a module may be compressed)
  std::string evidence;  // how it was proven
  std::string missing;
  uint64_t samples = 0;  // samples whose ip falls in it (in any DSO of its id)
  // A file without a build-id, proven by inode to be the mapped one, is kept by path and content
  // (store/symfs_layout.h): its content's SHA-256.
  std::string sha256;
  // The processes whose maps name it (sorted): which of two files at one path each one mapped.
  std::vector<uint32_t> pids;
};

// What a recording names by build-id, and what its samples hit without naming it so.
struct Named {
  std::vector<Binary> binaries;  // one per build-id
  // Files that samples hit but that no record gives a build-id (their `id` is empty). One with no
  // build-id of its own that is proven by inode to be the mapped file has a copy (`from`, `path`,
  // `sha256`), kept by path; of the others reports show the addresses raw.
  std::vector<Binary> idless;
  uint64_t samples = 0;  // in the recording
};

struct FindOptions {
  std::string sysroot;  // a copy of the recording host's root; empty: this machine
  // More roots a binary may be found under (--search): a copy there with the id is proof too.
  std::vector<std::string> search;
  std::string cache_dir;  // perf's build-id cache to take proven copies from; empty: none
  // Caches a pass of this run wrote into (the JIT code's ELF files, under --buildid-dir).
  std::vector<std::string> more_caches;
  // Whether to prove copies at all (fetch only needs the names and ids).
  bool prove = true;
  // Each proven program's and library's separate debug file too (resolve::find_debug_file), as a
  // Binary of kind kDebug after it; libdebuginfod's client cache is one place to look.
  bool debug_files = true;
  std::string debuginfod_client_cache;
};

// One Binary per build-id (the first DSO that names it), kernel vmlinux images after their
// kallsyms, debug files after their binaries. DSOs of guest machines are listed as missing.
// `dsos` is what inspect::list_build_ids lists of the recording `in` (every source, samples
// counted).
absl::StatusOr<Named> find_binaries(io::Input& in, const resolve::RecordedDsos& dsos,
                                    const resolve::Host& host, const FindOptions& options);

// The bytes that go into a cache or bundle for `b` (a module decompressed).
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> load_binary(const Binary& b,
                                                                const resolve::Host& host);

// Whether `image` is an ELF file whose build-id is `id`.
bool has_build_id(const llvm::MemoryBuffer& image, const format::BuildId& id);

}  // namespace pdfix::store
