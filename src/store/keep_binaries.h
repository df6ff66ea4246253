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

namespace pdfix::store {

struct Kept {
  size_t added = 0;    // files put in the bundle, or new to the cache
  size_t present = 0;  // already in the cache
  uint64_t bytes = 0;  // the bundle's size, or the bytes added to the cache
  size_t by_path = 0;  // files without a build-id kept by path (of `added` and `present`)
  size_t debug = 0;    // separate debug files (of `added`)
  // Where they went: the bundle's roots, or each file's root in the cache.
  std::vector<std::string> symfs_roots;
};

// Called after each binary with how many are done and the total.
using KeepProgress = std::function<void(size_t done, size_t total)>;

// `in` (a mapped file or a directory recording) as perf.data, every binary with a proven copy
// under .debug, and every file of `by_path` with a proven copy (no build-id) under symfs/
// (store/symfs_layout.h), into the bundle at `path` ("-": stdout).
absl::StatusOr<Kept> archive_recording(const io::Input& in, const std::vector<Binary>& binaries,
                                       const std::vector<Binary>& by_path,
                                       const resolve::Host& host, const std::string& path,
                                       int zstd_level, const KeepProgress& progress);

// Every binary with a proven copy into the build-id cache at `cache`, and every file of `by_path`
// with one under `cache`/.symfs/<first 16 hex digits of its SHA-256>/<path>: a root of its own
// for `perf report --symfs`, which two files at one path never share.
absl::StatusOr<Kept> store_binaries(const std::vector<Binary>& binaries,
                                    const std::vector<Binary>& by_path, const resolve::Host& host,
                                    const std::string& cache, const KeepProgress& progress);

}  // namespace pdfix::store
