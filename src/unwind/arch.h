// The register sets the unwinder knows: how perf numbers a sample's user registers (bit order of
// sample_regs_user) and how DWARF CFI numbers the same registers, per architecture.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pdfix::unwind {

enum class Arch { kX86_64, kAarch64 };

struct RegisterSet {
  Arch arch;
  uint32_t count;    // DWARF registers 0 .. count-1 are tracked
  uint32_t sp;       // DWARF number of the stack pointer
  uint32_t ra;       // the return-address column of the CFI
  uint32_t fp;       // the frame pointer, for the step taken where CFI is missing
  uint32_t perf_ip;  // perf's number (bit in sample_regs_user) of the instruction pointer
  // perf's register number to DWARF's; nullopt for those CFI never names (flags, segments).
  std::optional<uint32_t> (*dwarf_of_perf)(uint32_t perf_reg);
};

inline constexpr uint32_t kMaxRegisters = 33;

// By the ARCH feature's name ("x86_64", "aarch64", "arm64"); nullopt for other architectures.
std::optional<RegisterSet> register_set(std::string_view arch);

}  // namespace pdfix::unwind
