// When perf added each entry of its build-id cache for a path: the evidence, for a file gone or
// replaced since, of which build was at the path as a recording ended (perf record adds every
// mapped file just before it writes the header).
//
// The time of an add is that of the entry's .build-id link (its own, by lstat): perf makes the
// link when it adds the entry and never again. The entry's directory is no witness: pdfix's store
// writes into it (a debug file beside perf's elf) and makes entries of its own. A link pdfix makes
// carries time 0 (store/cache_store.h), so no entry it stored, an earlier chunk's stored while
// this one was recorded, is taken for perf's reading of the path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/build_id.h"

namespace pdfix::resolve {

struct CacheAdd {
  format::BuildId id;
  // Nanoseconds since the epoch; nullopt: no link of this entry's own (pdfix's, or the id's link
  // names another path's entry), so not known to be perf's add.
  std::optional<int64_t> added_at;
};

// Every id `cache` holds for `path` (a DSO name, as perf files it), with when perf added it.
std::vector<CacheAdd> cache_adds(const std::string& cache, const std::string& path);

}  // namespace pdfix::resolve
