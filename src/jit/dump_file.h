// A jitdump read from the first of the places it may be that holds it: the dump a recording's
// marker map names, written by that process, or a copy of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/jitdump.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pdfix::jit {

// A JIT file the recording names, where pdfix may read it.
struct FileCandidate {
  std::string path;
  // The very file: for a dump, the inode mapped, seen on the recording's host; for a map file, the
  // recorded path on that host. Anything else is a copy, taken only on its content's word.
  bool recorded = false;
};

struct DumpFile {
  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> file;
  JitDump dump;  // views `file`
};

// The first of `where` that is the dump of process `named_pid` (the pid its name gives), with
// times of CLOCK_MONOTONIC; a copy must hold no code loaded before the marker was mapped at
// `marker_time` (an earlier process's of that pid). Why each other file there is not it goes to
// `problems`.
std::optional<DumpFile> read_dump(const std::vector<FileCandidate>& where, uint32_t named_pid,
                                  std::optional<uint64_t> marker_time,
                                  std::vector<std::string>& problems);

}  // namespace pdfix::jit
