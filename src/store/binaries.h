// The binaries a recording's build-ids name, and for each the copy resolve finds proven to be
// that binary (resolve/find_copy.h: a file whose own build-id is the one named, the running
// kernel's kallsyms or this process's vdso when they have the id). Nothing else: a missing binary
// is listed with the reason, a wrong one would mislead every later analysis. Store only lists
// and writes; every search and proof is resolve's.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/build_id.h"
#include "io/input.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/cache_layout.h"
#include "resolve/find_copy.h"
#include "resolve/host.h"
#include "resolve/recorded_dsos.h"
#include "resolve/resolver.h"
#include "store/find_memory.h"

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
  using From = resolve::Copy::From;
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
  // The run's resolver: where a copy of a named binary is looked for (its sysroot, search roots
  // and build-id cache: Resolver::copy_places), and the proof of a file no record names by
  // build-id. nullptr: nothing is proven (fetch needs only the names and ids).
  resolve::Resolver* resolver = nullptr;
  // Caches a pass of this run wrote into (the JIT code's ELF files, under --buildid-dir).
  std::vector<std::string> more_caches;
  // Each proven program's and library's separate debug file too (resolve::find_debug_file), as a
  // Binary of kind kDebug after it.
  bool debug_files = true;
  // What earlier recordings of the run found (follow's chunks), used and filled; null: none.
  FindMemory* memory = nullptr;
};

// One Binary per build-id (the first DSO that names it), kernel vmlinux images after their
// kallsyms, debug files after their binaries. DSOs of guest machines are listed as missing.
// `dsos` is what inspect::list_build_ids lists of the recording (every source, samples counted);
// `facts` what the run's resolver takes of it (passes::recording_facts), read only with a
// resolver.
absl::StatusOr<Named> find_binaries(const resolve::RecordedDsos& dsos,
                                    const resolve::RecordingFacts& facts, const resolve::Host& host,
                                    const FindOptions& options);

// A loaded file's bytes, and the same when they map the file (empty for a copy in memory: a
// module decompressed, kallsyms, the vdso, whose pages are never dropped: store/file_image.h).
std::span<const uint8_t> bytes_of(const llvm::MemoryBuffer& b);
std::span<const uint8_t> mapping_of(const llvm::MemoryBuffer& b);

// The bytes that go into a cache or bundle for `b` (a module decompressed). A file that no longer
// carries the id it was proven by is an error (FailedPrecondition), as one gone is (NotFound).
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> load_binary(const Binary& b,
                                                                const resolve::Host& host);

}  // namespace pdfix::store
