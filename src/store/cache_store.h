// Adding files to perf's build-id cache in its own layout (store/cache_layout.h), as
// `perf buildid-cache -a` does. Safe to repeat and to run twice at once: each file and link is
// written under a temporary name and renamed into place, never over another: what is already
// there, or put there by another writer meanwhile, is kept.
#pragma once

#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "resolve/cache_layout.h"
#include "store/file_image.h"

namespace pdfix::store {

enum class Stored {
  kAdded,    // the file or its link was new, put there by this call (not another writer's)
  kPresent,  // both were there already
};

// `bytes` as `entry` in the cache rooted at `cache`, which is created if need be. A file already
// there is kept (its name holds its build-id; a store never changes what perf reads), and so is a
// link that names another DSO with the same id. A link made here has time 0: its time would say
// perf added the entry (resolve/cache_adds.h).
absl::StatusOr<Stored> store_in_cache(const std::string& cache, const resolve::CacheEntry& entry,
                                      const FileImage& image);
inline absl::StatusOr<Stored> store_in_cache(const std::string& cache,
                                             const resolve::CacheEntry& entry,
                                             std::span<const uint8_t> bytes) {
  return store_in_cache(cache, entry, FileImage::whole(bytes));
}

// Whether the cache holds `entry` and its link already: store_in_cache would change nothing, so
// the binary need not be read (a store per chunk of an always-on recording keeps each once).
bool holds_entry(const std::string& cache, const resolve::CacheEntry& entry);

// `bytes` as the file `name` (relative, checked by the caller) under `cache`, unless a file is
// there already: a name that holds the content's hash is never given other bytes.
absl::StatusOr<Stored> store_file(const std::string& cache, const std::string& name,
                                  const FileImage& image);

// Writes `image` to `path` through a temporary file beside it and a rename: readers see the whole
// file or none. Its holes stay holes on a file system that has them. `permissions` as for open(2).
// False when a file was put at `path` meanwhile (another writer): that one is kept, whole.
absl::StatusOr<bool> write_new_file(const std::string& path, const FileImage& image,
                                    unsigned permissions);

}  // namespace pdfix::store
