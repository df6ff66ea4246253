// The architectures perf records and pdfix reads, and what reading each takes: the name perf's
// ARCH feature gives it (uname's machine string), the ELF machine of its code, pointer size and
// byte order, LLVM's name for it, where its kernel puts modules, and, for those pdfix unwinds,
// how perf numbers a sample's user registers next to DWARF. One table: an architecture added
// next year is one more row, and nothing else in src/ compares an ARCH string.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "llvm/TargetParser/Triple.h"

namespace pdfix::format {

enum class Arch {
  kX86_64,
  kI386,
  kAarch64,
  kArm,
  kPpc64,
  kPpc64le,
  kPpc,
  kS390x,
  kS390,
  kRiscv64,
  kMips
};

// perf's numbering of a sample's user registers (the bits of sample_regs_user) and DWARF's.
struct UserRegisters {
  uint32_t count;    // DWARF registers 0 .. count-1 are tracked
  uint32_t sp;       // DWARF number of the stack pointer
  uint32_t ra;       // the return-address column of the CFI
  uint32_t fp;       // the frame pointer, for the step taken where CFI is missing
  uint32_t perf_ip;  // perf's number (bit in sample_regs_user) of the instruction pointer
  // perf's register number to DWARF's; nullopt for those CFI never names (flags, segments).
  std::optional<uint32_t> (*dwarf_of_perf)(uint32_t perf_reg);
};

struct ArchFacts {
  Arch arch;
  std::string_view name;  // as uname -m, and so perf's ARCH feature, says it
  uint16_t elf_machine;
  uint8_t pointer_size;  // bytes
  bool big_endian;
  llvm::Triple::ArchType triple;  // for LLVM's DWARF readers
  // The end of the kernel's module area that holds a module loaded at `module_start`; nullptr,
  // or nullopt, where the kernel sources give no bound that holds across versions and
  // configurations (there a module is still bounded by the next one and the kernel image).
  std::optional<uint64_t> (*module_area_end)(uint64_t module_start);
  // perf maps a module from its .text, which lies past the module's base (s390).
  bool module_maps_start_at_text;
  // How its samples' user registers are numbered; nullptr where pdfix does not unwind.
  const UserRegisters* registers;
};

// By the ARCH feature's string ("x86_64", "aarch64", "armv7l", "i686", ...; "amd64" and "arm64"
// as Debian and other tools name the same); nullptr for one not in the table, or none.
const ArchFacts* arch_named(std::string_view arch);

// By an ELF file's machine and byte order (a jitdump's header gives both); nullptr if unknown.
const ArchFacts* arch_of_elf(uint16_t elf_machine, bool big_endian);

// `arch`'s module area end for a module at `module_start`; nullopt where it has none, or for
// no architecture.
std::optional<uint64_t> module_area_end(const ArchFacts* arch, uint64_t module_start);

// The architecture a recording must be from whose kernel image starts at `kernel_start` with a
// module mapped at `module_start` above it, where the addresses leave one: x86_64 (its kernel
// text lies in [-2 GiB, -1 GiB) with the modules above it, from 0xffffffffa0000000; riscv64 puts
// its kernel there too, but its modules below it). nullptr where they leave several. For
// recordings with no ARCH feature (pipe mode before perf 4.x).
const ArchFacts* arch_by_kernel_layout(uint64_t kernel_start, uint64_t module_start);

}  // namespace pdfix::format
