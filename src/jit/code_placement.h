// Where a dump's code was in the process, and from when: one placement for each load with code and
// each move of loaded code, in time order, each at the offset of its code in the dump's ELF file.
// inject-jit makes each an MMAP2.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "jit/jitdump.h"

namespace pdfix::jit {

struct Placement {
  uint64_t time = 0;
  uint32_t tid = 0;  // in the runtime's pid namespace
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;  // of the code in the ELF file
};

// `offsets`: of each load's code in the ELF file, in the order of `dump.loads`. A move is placed
// before the first load written after it and only once the code it moves was loaded; a move of
// nothing, or of code never loaded, places nothing.
std::vector<Placement> place_code(const JitDump& dump, std::span<const uint64_t> offsets);

}  // namespace pdfix::jit
