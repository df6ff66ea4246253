// The architecture table (format/arch.h), each fact of each row against a source of its own:
// LLVM's triple parser for pointer size, byte order and LLVM's name; the ELF specification for
// machines; the kernel's uapi headers for perf's register numbers; the kernel sources for module
// areas; this very program's ELF header for the machine it runs on.
#include "format/arch.h"

#include <asm/perf_regs.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "llvm/TargetParser/Triple.h"

namespace pdfix::format {
namespace {

struct Expected {
  std::string name;
  uint16_t elf_machine;  // the ELF specification's e_machine
};

// Every architecture perf records that pdfix reads, as uname -m names it.
const std::vector<Expected> kEvery = {
    {"x86_64", 62}, {"i386", 3},      {"aarch64", 183}, {"arm", 40},
    {"ppc64", 21},  {"ppc64le", 21},  {"ppc", 20},      {"s390x", 22},
    {"s390", 22},   {"riscv64", 243}, {"mips", 8},
};

TEST(ArchTable, EveryRowAgreesWithLlvmsTripleAndTheElfSpecification) {
  for (const Expected& e : kEvery) {
    const ArchFacts* a = arch_named(e.name);
    ASSERT_NE(a, nullptr) << e.name;
    EXPECT_EQ(a->name, e.name);
    EXPECT_EQ(a->elf_machine, e.elf_machine) << e.name;
    if (e.name == "s390") {
      // LLVM has no 31-bit s390: the table says 4 bytes, big-endian, and no LLVM name.
      EXPECT_EQ(a->pointer_size, 4);
      EXPECT_TRUE(a->big_endian);
      EXPECT_EQ(a->triple, llvm::Triple::UnknownArch);
      continue;
    }
    const llvm::Triple t(e.name + "-unknown-linux-gnu");
    EXPECT_EQ(a->triple, t.getArch()) << e.name;
    EXPECT_EQ(a->pointer_size, t.isArch64Bit() ? 8 : 4) << e.name;
    EXPECT_EQ(a->big_endian, !t.isLittleEndian()) << e.name;
    // The row found by machine and byte order is this one.
    EXPECT_EQ(arch_of_elf(a->elf_machine, a->big_endian), a) << e.name;
  }
}

TEST(ArchTable, UnamesSpellingsAreOneArchitectureAndOthersNone) {
  EXPECT_EQ(arch_named("amd64"), arch_named("x86_64"));
  EXPECT_EQ(arch_named("arm64"), arch_named("aarch64"));
  for (const char* name : {"i486", "i586", "i686"}) EXPECT_EQ(arch_named(name), arch_named("i386"));
  for (const char* name : {"armv7l", "armv6l", "armv8l"}) {
    EXPECT_EQ(arch_named(name), arch_named("arm"));
  }
  for (const char* name : {"", "sparc64", "i786", "x86", "arm64e", "AARCH64"}) {
    EXPECT_EQ(arch_named(name), nullptr) << name;
  }
}

TEST(ArchTable, TheMachineThisRunsOnIsItsOwnElfHeaders) {
  std::ifstream self("/proc/self/exe", std::ios::binary);
  std::vector<char> header(20);
  ASSERT_TRUE(self.read(header.data(), static_cast<std::streamsize>(header.size())));
  const uint16_t machine = static_cast<uint8_t>(header[18]) | static_cast<uint8_t>(header[19]) << 8;
  const bool big_endian = header[5] == 2;  // EI_DATA: ELFDATA2MSB
  const ArchFacts* a = arch_of_elf(
      big_endian ? static_cast<uint16_t>(machine >> 8 | machine << 8) : machine, big_endian);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pointer_size, header[4] == 2 ? 8 : 4);  // EI_CLASS: ELFCLASS64
#if defined(__x86_64__)
  EXPECT_EQ(a->name, "x86_64");
#elif defined(__aarch64__)
  EXPECT_EQ(a->name, "aarch64");
#endif
}

TEST(ArchTable, AJitdumpOfTheOtherByteOrderTakesItsMachinesRow) {
  // mipsel, armeb, ppc (little-endian): all but the byte order is the row's.
  EXPECT_EQ(arch_of_elf(8, false), arch_named("mips"));
  EXPECT_EQ(arch_of_elf(40, true), arch_named("arm"));
  EXPECT_EQ(arch_of_elf(22, true), arch_named("s390x"));  // not 31-bit s390
  EXPECT_EQ(arch_of_elf(0, false), nullptr);
}

TEST(ArchTable, PerfsUserRegistersAreTheKernelsNumbers) {
  // x86_64: arch/x86/include/uapi/asm/perf_regs.h, as installed here.
  const UserRegisters* x86 = arch_named("x86_64")->registers;
  ASSERT_NE(x86, nullptr);
  EXPECT_EQ(x86->perf_ip, uint32_t{PERF_REG_X86_IP});
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_SP), x86->sp);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_BP), x86->fp);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_IP), x86->ra);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_FLAGS), std::nullopt);
  // The psABI's DWARF numbers: RSP 7, RBP 6, the return address 16, RAX 0, RDX 1, R15 15.
  EXPECT_EQ(x86->sp, 7U);
  EXPECT_EQ(x86->fp, 6U);
  EXPECT_EQ(x86->ra, 16U);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_AX), 0U);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_DX), 1U);
  EXPECT_EQ(x86->dwarf_of_perf(PERF_REG_X86_R15), 15U);
  // arm64: arch/arm64/include/uapi/asm/perf_regs.h: X0 .. X28, X29 (FP), LR 30, SP 31, PC 32;
  // DWARF numbers X0 .. X30 and SP alike.
  const UserRegisters* arm = arch_named("aarch64")->registers;
  ASSERT_NE(arm, nullptr);
  EXPECT_EQ(arm->perf_ip, 32U);
  EXPECT_EQ(arm->sp, 31U);
  EXPECT_EQ(arm->fp, 29U);
  EXPECT_EQ(arm->ra, 30U);
  EXPECT_EQ(arm->dwarf_of_perf(30), 30U);
  EXPECT_EQ(arm->dwarf_of_perf(33), std::nullopt);
  // Stacks of the others are not unwound.
  for (const Expected& e : kEvery) {
    if (e.name != "x86_64" && e.name != "aarch64") {
      EXPECT_EQ(arch_named(e.name)->registers, nullptr) << e.name;
    }
  }
}

TEST(ArchTable, ModuleAreasFromTheKernelSources) {
  auto area = [](const char* arch, uint64_t start) {
    return module_area_end(arch_named(arch), start);
  };
  // x86_64: MODULES_END, whichever MODULES_VADDR KASLR chose.
  EXPECT_EQ(area("x86_64", 0xffffffffa0000000), 0xffffffffff000000);
  EXPECT_EQ(area("x86_64", 0xffffffffc0000000), 0xffffffffff000000);
  // arm: PAGE_OFFSET above a 16 MiB module area; 0xc0000000 and 0x80000000 splits.
  EXPECT_EQ(area("armv7l", 0xbf000000), 0xc0000000);
  EXPECT_EQ(area("armv7l", 0x7f102000), 0x80000000);
  // i386: below the fixmap; s390: 31-bit addressing.
  EXPECT_EQ(area("i686", 0xf8000000), 0xfffff000);
  EXPECT_EQ(area("s390", 0x3ff8000), uint64_t{1} << 31);
  // s390x before KASLR: 2 GiB below 4 TiB (3-level) or 8 PiB (4-level).
  EXPECT_EQ(area("s390x", 0x3ff804d6990), uint64_t{1} << 42);
  EXPECT_EQ(area("s390x", 0x1fffff80002000), uint64_t{1} << 53);
  EXPECT_EQ(area("s390x", 0x3ff00000000), std::nullopt);
  // No bound that holds across versions: the next module and the kernel image bound these.
  EXPECT_EQ(area("aarch64", 0xffff800008000000), std::nullopt);
  EXPECT_EQ(area("ppc64le", 0xc008000000000000), std::nullopt);
  EXPECT_EQ(area("sparc64", 0x10000000), std::nullopt);
  // perf maps s390 modules from their .text, every other architecture's from the base.
  for (const Expected& e : kEvery) {
    EXPECT_EQ(arch_named(e.name)->module_maps_start_at_text, e.name.starts_with("s390")) << e.name;
  }
}

TEST(ArchTable, AKernelAtMinusTwoGibWithModulesAboveIsX86_64) {
  EXPECT_EQ(arch_by_kernel_layout(0xffffffff81000000, 0xffffffffc0000000), arch_named("x86_64"));
  EXPECT_EQ(arch_by_kernel_layout(0xffffffff81000000, 0xffffffff80000000), nullptr);
  EXPECT_EQ(arch_by_kernel_layout(0xffff800008000000, 0xffff800001000000), nullptr);
}

}  // namespace
}  // namespace pdfix::format
