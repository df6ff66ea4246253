// A binary's separate debug file (DWARF and the full symbol table that a stripped distribution
// binary leaves out), looked for where distributions, perf and libdebuginfod put it, and proven by
// its own build-id, which is the binary's: no other evidence makes a debug file the right one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "format/build_id.h"
#include "resolve/find_copy.h"

namespace pdfix::resolve {

enum class DebugSource {
  kBuildIdDir,  // /usr/lib/debug/.build-id/xx/rest.debug: Debian's -dbg and dbgsym packages
  kDebugLink,   // the binary's .gnu_debuglink name, beside it, in .debug/, under /usr/lib/debug
  kCache,       // a build-id cache's <name>/<id>/debug (perf buildid-cache -a keeps it there)
  kDebuginfod,  // what libdebuginfod fetched before: <client cache>/<id>/debuginfo
};
std::string_view name(DebugSource s);

struct DebugFile {
  std::string path;
  DebugSource source;
};

// The debug file of the binary of build-id `id`, mapped as `name` on the recording host, of which
// `binary` is a proven copy here (read for its .gnu_debuglink); nullopt when no place has a file
// with that id. The places are taken in DebugSource's order, of `places` the sysroot, the caches
// and libdebuginfod's client cache.
std::optional<DebugFile> find_debug_file(const format::BuildId& id, const std::string& name,
                                         const std::string& binary, const CopyPlaces& places);

}  // namespace pdfix::resolve
