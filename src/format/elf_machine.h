// The ELF e_machine of the code a recording holds, from its ARCH header feature (uname's machine
// string): what an ELF file made for the recording's JIT code says it runs on.
#pragma once

#include <cstdint>
#include <string_view>

#include "llvm/BinaryFormat/ELF.h"

namespace pdfix::format {

// x86-64 for an ARCH this does not know (a recording without the feature is most likely one).
inline uint16_t elf_machine_of_arch(std::string_view arch) {
  if (arch == "aarch64" || arch == "arm64") return llvm::ELF::EM_AARCH64;
  if (arch == "i386" || arch == "i686") return llvm::ELF::EM_386;
  if (arch.starts_with("arm")) return llvm::ELF::EM_ARM;
  if (arch.starts_with("ppc64")) return llvm::ELF::EM_PPC64;
  if (arch == "s390x") return llvm::ELF::EM_S390;
  if (arch == "riscv64") return llvm::ELF::EM_RISCV;
  return llvm::ELF::EM_X86_64;
}

}  // namespace pdfix::format
