#include "unwind/arch.h"

#include <bit>

namespace pdfix::unwind {

std::optional<RegisterSet> register_set(std::string_view arch) {
  const format::ArchFacts* f = format::arch_named(arch);
  if (f == nullptr || f->registers == nullptr || f->registers->count > kMaxRegisters) {
    return std::nullopt;
  }
  return RegisterSet{*f->registers, f, f->arch};
}

uint64_t code_address_mask(const RegisterSet& set, uint64_t highest) {
  const int bits = std::bit_width(highest);
  if (set.arch != Arch::kAarch64 || highest == 0 || bits >= 64) return ~uint64_t{0};
  return (uint64_t{1} << bits) - 1;
}

}  // namespace pdfix::unwind
