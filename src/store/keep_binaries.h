// The two ways a recording's proven binaries are kept on the recording host: in a bundle with the
// recording (`pdfix archive`), or in a build-id cache (`pdfix store`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "resolve/host.h"
#include "store/binaries.h"
#include "store/bundle_chain.h"

namespace pdfix::store {

// What a group of kept files costs: their data, before compression.
struct Cost {
  size_t files = 0;
  uint64_t bytes = 0;
};

struct Kept {
  size_t added = 0;    // files put in the bundle, or new to the cache
  size_t present = 0;  // already in the cache
  uint64_t bytes = 0;  // the bundle's size, or the bytes added to the cache
  size_t by_path = 0;  // files without a build-id kept by path (of `added` and `present`)
  size_t debug = 0;    // separate debug files (of `added`)
  // Where they went: the bundle's roots, or each file's root in the cache.
  std::vector<std::string> symfs_roots;
  size_t slim = 0;        // files kept slim (of `added`)
  uint64_t left_out = 0;  // bytes of code and data the slim copies left out
  // By group: the binaries that samples hit, the others, the separate debug files.
  Cost hit, not_hit, debug_cost;
  // A bundle's files under .debug, and whether each is a slim copy: what a chain of bundles
  // takes it to hold.
  std::vector<std::pair<std::string, bool>> files;
  size_t elsewhere = 0;  // files the bundle's manifest names in earlier bundles of its chain
};

// Called after each binary with how many are done and the total.
using KeepProgress = std::function<void(size_t done, size_t total)>;

struct KeepOptions {
  // Each ELF file kept as its slim copy (store/slim_elf.h): what reports read, without code.
  bool slim = false;
  // Of a slim copy: its unwind tables too (a recording with user stack copies needs them).
  bool unwind_tables = true;
  int zstd_level = 3;  // a bundle's
  KeepProgress progress;
  // A bundle's chain (pdfix follow --archive): what an earlier bundle of it holds is named in the
  // manifest, not added. Null: the bundle holds everything.
  const BundleChain* chain = nullptr;
};

// `in` (a mapped file or a directory recording) as perf.data, every binary of `named` with a
// proven copy under .debug, and every file of its `idless` with a proven copy (no build-id) under
// symfs/ (store/symfs_layout.h), into the bundle at `path` ("-": stdout). The bundle's manifest
// (kBundleManifest) names the files kept slim, and those that earlier bundles of its chain hold.
// A proven copy that can no longer be read (gone with its process, removed, rewritten) is left
// out, and its Binary in `named` says so (no copy, `missing` why); writing fails the call.
absl::StatusOr<Kept> archive_recording(const io::Input& in, Named& named, const resolve::Host& host,
                                       const std::string& path, const KeepOptions& options);

// Every binary of `named` with a proven copy into the build-id cache at `cache`, and every file of
// its `idless` with one under `cache`/.symfs/<first 16 hex digits of its SHA-256>/<path>: a root
// of its own for `perf report --symfs`, which two files at one path never share. A copy that can
// no longer be read is left out as archive_recording leaves it.
absl::StatusOr<Kept> store_binaries(Named& named, const resolve::Host& host,
                                    const std::string& cache, const KeepOptions& options);

}  // namespace pdfix::store
