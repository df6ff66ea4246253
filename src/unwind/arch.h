// The register sets the unwinder knows: how perf numbers a sample's user registers (bit order of
// sample_regs_user) and how DWARF CFI numbers the same registers, per architecture, as the
// architecture table (format/arch.h) has them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "format/arch.h"

namespace pdfix::unwind {

using Arch = format::Arch;

struct RegisterSet : format::UserRegisters {
  const format::ArchFacts* facts;  // its architecture's row: pointer size, byte order, LLVM's name
  Arch arch;
};

inline constexpr uint32_t kMaxRegisters = 33;

// By the ARCH feature's name ("x86_64", "aarch64", "arm64"); nullopt for an architecture whose
// stacks pdfix does not unwind.
std::optional<RegisterSet> register_set(std::string_view arch);

// The bits a user code address may have set, for unwind::CodeMap::code_address_mask. On aarch64
// a signed return address carries its pointer-authentication code in the bits above the user
// address space (and in the top byte). perf 6.1 records no PAC mask, so the space is judged from
// the recording: `highest` is the highest user address it shows (a map's last byte, a sampled
// stack pointer). Every mapped address fits in its bits and the kernel's space is at least as
// large, so clearing the rest strips every signature and changes no genuine address.
uint64_t code_address_mask(const RegisterSet& set, uint64_t highest);

}  // namespace pdfix::unwind
