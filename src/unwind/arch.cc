#include "unwind/arch.h"

#include <array>
#include <bit>

namespace pdfix::unwind {
namespace {

// perf's x86 order (arch/x86/include/uapi/asm/perf_regs.h): AX BX CX DX SI DI BP SP IP FLAGS CS
// SS DS ES FS GS R8 .. R15. DWARF's (the SysV psABI): RAX RDX RCX RBX RSI RDI RBP RSP R8 .. R15, 16
// is the return address.
std::optional<uint32_t> x86_64_dwarf(uint32_t perf_reg) {
  constexpr std::array<int, 24> kMap = {0,  3,  2,  1,  4, 5, 6,  7,  16, -1, -1, -1,
                                        -1, -1, -1, -1, 8, 9, 10, 11, 12, 13, 14, 15};
  if (perf_reg >= kMap.size() || kMap[perf_reg] < 0) return std::nullopt;
  return static_cast<uint32_t>(kMap[perf_reg]);
}

// perf's arm64 order is X0 .. X30 (LR), SP, PC; DWARF numbers X0 .. X30 and SP alike. The PC has
// no DWARF number: it is carried as the return-address column's value.
std::optional<uint32_t> aarch64_dwarf(uint32_t perf_reg) {
  if (perf_reg <= 31) return perf_reg;
  if (perf_reg == 32) return 32;
  return std::nullopt;
}

}  // namespace

std::optional<RegisterSet> register_set(std::string_view arch) {
  if (arch == "x86_64" || arch == "amd64") {
    return RegisterSet{Arch::kX86_64, 17, 7, 16, 6, 8, &x86_64_dwarf};
  }
  if (arch == "aarch64" || arch == "arm64") {
    return RegisterSet{Arch::kAarch64, 33, 31, 30, 29, 32, &aarch64_dwarf};
  }
  return std::nullopt;
}

uint64_t code_address_mask(const RegisterSet& set, uint64_t highest) {
  const int bits = std::bit_width(highest);
  if (set.arch != Arch::kAarch64 || highest == 0 || bits >= 64) return ~uint64_t{0};
  return (uint64_t{1} << bits) - 1;
}

}  // namespace pdfix::unwind
