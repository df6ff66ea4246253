// ELF files for JIT code, so that any reader finds its functions by build-id, on any host: one file
// per jitdump (every load's code at its own offset, a symbol each) and one symbol-only file per
// perf-PID.map, written by jit/elf_writer.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/elf_writer.h"
#include "jit/jitdump.h"
#include "jit/perf_map.h"

namespace pdfix::jit {

// The dump's code as one ELF file: ET_DYN, file offsets equal addresses, so a map of a load's
// code gives the load's offset as its pgoff.
struct DumpImage {
  ElfImage elf;
  std::vector<uint64_t> offsets;  // of each load's code, in the order of JitDump::loads
};
absl::StatusOr<DumpImage> dump_image(const JitDump& dump);

// A process's map-file symbols as an ELF file without code: ET_DYN, file offsets equal addresses
// (perf adjusts a user DSO's symbols by its program header, some versions only for ET_EXEC), the
// process's address `a` at offset_of(a): a map of its JIT code at `start` has offset_of(start)
// as its pgoff.
struct SymbolImage {
  ElfImage elf;
  uint64_t base = 0;  // the page of the lowest symbol
  uint64_t offset_of(uint64_t address) const;
};
absl::StatusOr<SymbolImage> symbol_image(std::span<const MapSymbol> symbols, uint16_t elf_machine,
                                         bool big_endian);

}  // namespace pdfix::jit
