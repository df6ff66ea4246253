// What a recording names: its DSOs, each a file and its build-id (two files at one path are two
// DSOs), with the facts of where it was made that prove its files there. Made by
// inspect::list_build_ids; read by whatever keeps, fetches or checks a recording's binaries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/feature.h"

namespace pdfix::resolve {

struct DsoBuildId {
  std::string build_id;  // hex; empty for a DSO that samples hit but no record gives an id for
  std::string name;      // the DSO's long name: a path, "[kernel.kallsyms]", "[vdso]", ...
  std::string machine;   // "host" or "guest <pid>"
  uint64_t samples = 0;  // samples whose ip falls in it (when samples were read)
  // A DSO whose maps carry no id is one file: the device and inode its MMAP2s name (none for an
  // MMAP). Of every DSO, the processes whose user maps name it, sorted: which of two files at one
  // path a process mapped, and what a report of it may be filtered by.
  bool has_inode = false;
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  std::vector<uint32_t> pids;
};

struct RecordedDsos {
  std::vector<DsoBuildId> dsos;
  uint64_t samples = 0;  // samples read; each DSO's own count is in its DsoBuildId
  // What the recording says of where it was made, for proving its files there.
  std::string hostname;
  std::string osrelease;
  std::optional<uint64_t> kernel_text;
  std::vector<format::BuildIdEntry> table;
  // How often the samples' time order passed its bound and was applied early (hits then follow
  // the maps in the order reached): transform/look_ahead.h.
  uint64_t early_flushes = 0;
  // Some event copies user stacks (DWARF-mode callchains): readers unwind them with the
  // binaries' unwind tables.
  bool user_stacks = false;
};

}  // namespace pdfix::resolve
