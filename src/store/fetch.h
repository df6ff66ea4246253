// Getting the binaries a recording names from debuginfod servers (elfutils' libdebuginfod), on a
// host that analyses a recording made elsewhere. What arrives is kept only if its build-id is the
// one asked for, and goes into perf's build-id cache in perf's layout.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/binaries.h"

namespace pdfix::store {

struct FetchOptions {
  std::string cache;         // perf's build-id cache to fill
  std::string client_cache;  // libdebuginfod's own (Host::debuginfod_client_cache)
  std::string urls;          // space-separated server URLs
  bool debuginfo = false;
  std::function<void(size_t done, size_t total)> progress;
};

enum class Outcome {
  kPresent,      // already in perf's cache
  kFetched,      // sent by a server
  kCached,       // from libdebuginfod's client cache, no server asked
  kMissing,      // the servers answered that they do not have it
  kUnreachable,  // no server could be asked (refused, unresolved, timed out, HTTP 5xx)
  kFailed,       // what arrived was wrong or could not be stored
};
// "present", "fetched", ...: the word summaries and JSON use.
std::string_view name(Outcome o);
// The file is in the cache now.
inline bool in_cache_now(Outcome o) {
  return o == Outcome::kPresent || o == Outcome::kFetched || o == Outcome::kCached;
}

struct Fetched {
  std::string build_id;
  std::string name;
  std::string what;  // "executable", "debuginfo", "vmlinux"
  Outcome outcome = Outcome::kFailed;
  std::string detail;
  bool asked = false;  // a server was asked (not so for present, cached and remembered misses)
};

// One row per binary and kind of file asked for. Kernels are asked for their vmlinux (no server
// has a kallsyms); guests' DSOs are not asked for.
absl::StatusOr<std::vector<Fetched>> fetch_binaries(const std::vector<Binary>& named,
                                                    const FetchOptions& options);

}  // namespace pdfix::store
