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

// The bits a user code address may have set, for unwind::CodeMap::code_address_mask. On aarch64
// a signed return address carries its pointer-authentication code in the bits above the user
// address space (and in the top byte). perf 6.1 records no PAC mask, so the space is judged from
// the recording: `highest` is the highest user address it shows (a map's last byte, a sampled
// stack pointer). Every mapped address fits in its bits and the kernel's space is at least as
// large, so clearing the rest strips every signature and changes no genuine address.
uint64_t code_address_mask(const RegisterSet& set, uint64_t highest);

}  // namespace pdfix::unwind
