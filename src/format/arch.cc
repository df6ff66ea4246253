#include "format/arch.h"

#include <array>

#include "llvm/BinaryFormat/ELF.h"

namespace pdfix::format {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

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

constexpr UserRegisters kX86_64Registers{
    .count = 17, .sp = 7, .ra = 16, .fp = 6, .perf_ip = 8, .dwarf_of_perf = &x86_64_dwarf};
constexpr UserRegisters kAarch64Registers{
    .count = 33, .sp = 31, .ra = 30, .fp = 29, .perf_ip = 32, .dwarf_of_perf = &aarch64_dwarf};

// arch/x86/include/asm/pgtable_64_types.h: MODULES_END is fixed; MODULES_VADDR is
// 0xffffffffa0000000, or 0xffffffffc0000000 with a 1 GiB KASLR image area.
std::optional<uint64_t> x86_64_modules_end(uint64_t module_start) {
  constexpr uint64_t kModulesEnd = 0xffffffffff000000;
  if (module_start < kModulesEnd) return kModulesEnd;
  return std::nullopt;
}

// arch/x86/include/asm/pgtable_32_areas.h: modules live in the vmalloc area, which ends below the
// fixmap; the fixmap's top, __FIXADDR_TOP, is 0xfffff000 at most.
std::optional<uint64_t> i386_modules_end(uint64_t /*module_start*/) { return 0xfffff000; }

// arch/arm/include/asm/memory.h: MODULES_VADDR = PAGE_OFFSET - 16 MiB (8 MiB for Thumb-2),
// MODULES_END = PAGE_OFFSET, and PAGE_OFFSET (CONFIG_PAGE_OFFSET) is a multiple of 16 MiB: the
// area ends at the first 16 MiB boundary above the module.
std::optional<uint64_t> arm_modules_end(uint64_t module_start) {
  return (module_start | (16 * kMiB - 1)) + 1;
}

// arch/s390 before KASLR moved the area below the kernel image: MODULES_END was the top of the
// 3-level (4 TiB) or 4-level (8 PiB) address space, MODULES_LEN 2 GiB below it.
std::optional<uint64_t> s390x_modules_end(uint64_t module_start) {
  for (uint64_t end : {uint64_t{1} << 42, uint64_t{1} << 53}) {
    if (module_start < end && module_start >= end - 2 * kGiB) return end;
  }
  return std::nullopt;
}

std::optional<uint64_t> s390_modules_end(uint64_t /*module_start*/) {
  return uint64_t{1} << 31;  // 31-bit addressing
}

namespace ELF = llvm::ELF;
using llvm::Triple;

constexpr std::array<ArchFacts, 11> kArchs = {{
    {Arch::kX86_64, "x86_64", ELF::EM_X86_64, 8, false, Triple::x86_64, &x86_64_modules_end, false,
     &kX86_64Registers},
    {Arch::kI386, "i386", ELF::EM_386, 4, false, Triple::x86, &i386_modules_end, false, nullptr},
    {Arch::kAarch64, "aarch64", ELF::EM_AARCH64, 8, false, Triple::aarch64, nullptr, false,
     &kAarch64Registers},
    {Arch::kArm, "arm", ELF::EM_ARM, 4, false, Triple::arm, &arm_modules_end, false, nullptr},
    {Arch::kPpc64, "ppc64", ELF::EM_PPC64, 8, true, Triple::ppc64, nullptr, false, nullptr},
    {Arch::kPpc64le, "ppc64le", ELF::EM_PPC64, 8, false, Triple::ppc64le, nullptr, false, nullptr},
    {Arch::kPpc, "ppc", ELF::EM_PPC, 4, true, Triple::ppc, nullptr, false, nullptr},
    {Arch::kS390x, "s390x", ELF::EM_S390, 8, true, Triple::systemz, &s390x_modules_end, true,
     nullptr},
    {Arch::kS390, "s390", ELF::EM_S390, 4, true, Triple::UnknownArch, &s390_modules_end, true,
     nullptr},
    {Arch::kRiscv64, "riscv64", ELF::EM_RISCV, 8, false, Triple::riscv64, nullptr, false, nullptr},
    {Arch::kMips, "mips", ELF::EM_MIPS, 4, true, Triple::mips, nullptr, false, nullptr},
}};

}  // namespace

const ArchFacts* arch_named(std::string_view arch) {
  // Other spellings of one architecture: Debian's and Go's amd64 and arm64, uname's i386 .. i686
  // and armv5tel .. armv8l (a 32-bit kernel's).
  if (arch == "amd64") {
    arch = "x86_64";
  } else if (arch == "arm64") {
    arch = "aarch64";
  } else if (arch.size() == 4 && arch[0] == 'i' && arch[1] >= '3' && arch[1] <= '6' &&
             arch.substr(2) == "86") {
    arch = "i386";
  } else if (arch.starts_with("armv")) {
    arch = "arm";
  }
  for (const ArchFacts& f : kArchs) {
    if (f.name == arch) return &f;
  }
  return nullptr;
}

const ArchFacts* arch_of_elf(uint16_t elf_machine, bool big_endian) {
  const ArchFacts* other_order = nullptr;
  for (const ArchFacts& f : kArchs) {
    // s390's 31-bit code has s390x's machine; a runtime that writes jitdumps is 64-bit there.
    if (f.elf_machine != elf_machine || f.arch == Arch::kS390) continue;
    if (f.big_endian == big_endian) return &f;
    // mipsel, armeb, ppcle: the row of the other byte order, for all but the order.
    if (other_order == nullptr) other_order = &f;
  }
  return other_order;
}

std::optional<uint64_t> module_area_end(const ArchFacts* arch, uint64_t module_start) {
  if (arch == nullptr || arch->module_area_end == nullptr) return std::nullopt;
  return arch->module_area_end(module_start);
}

const ArchFacts* arch_by_kernel_layout(uint64_t kernel_start, uint64_t module_start) {
  if (kernel_start >= 0xffffffff80000000ULL && kernel_start < 0xffffffffc0000000ULL &&
      module_start >= 0xffffffffa0000000ULL && module_start > kernel_start) {
    return arch_named("x86_64");
  }
  return nullptr;
}

}  // namespace pdfix::format
