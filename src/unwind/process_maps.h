// The executable mappings of each process as the recording's map records lay them out, so that a
// sample's pcs can be placed in a binary. A later map over the same addresses replaces the earlier
// (as in the process), a fork copies the parent's, an exec starts afresh.
#pragma once

#include <cstdint>
#include <map>

#include "absl/container/flat_hash_map.h"

namespace pdfix::unwind {

class ProcessMaps {
 public:
  struct Mapping {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t pgoff = 0;
    uint32_t binary = 0;  // the caller's handle for the mapped file
  };

  void map(uint32_t pid, const Mapping& m);
  void fork(uint32_t parent, uint32_t child);
  void exec(uint32_t pid);
  const Mapping* find(uint32_t pid, uint64_t addr) const;

 private:
  absl::flat_hash_map<uint32_t, std::map<uint64_t, Mapping>> by_pid_;
};

}  // namespace pdfix::unwind
