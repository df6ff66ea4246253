// An ELF image read with LLVM's ELFFile templates (llvm/Object/ELF.h), typed by its class and byte
// order. ObjectFile and ELFObjectFile would do the same, but bring every object format LLVM
// reads, bitcode and its IR among them: 8 MB of pdfix's text and a third of its start-up.
#pragma once

#include <cstdint>
#include <span>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Object/ELFTypes.h"

namespace pdfix::resolve {

// Whether `image` starts with the ELF magic and a class and byte order LLVM knows.
inline bool is_elf(std::span<const uint8_t> image) {
  return image.size() > llvm::ELF::EI_DATA &&
         llvm::StringRef(reinterpret_cast<const char*>(image.data()), image.size())
             .starts_with(llvm::ELF::ElfMagic) &&
         (image[llvm::ELF::EI_CLASS] == llvm::ELF::ELFCLASS32 ||
          image[llvm::ELF::EI_CLASS] == llvm::ELF::ELFCLASS64) &&
         (image[llvm::ELF::EI_DATA] == llvm::ELF::ELFDATA2LSB ||
          image[llvm::ELF::EI_DATA] == llvm::ELF::ELFDATA2MSB);
}

// visit.template operator()<ELFT>() for the ELF type of `image`, which is_elf() accepted.
template <class Visitor>
auto with_elf_type(std::span<const uint8_t> image, Visitor&& visit) {
  const bool is64 = image[llvm::ELF::EI_CLASS] == llvm::ELF::ELFCLASS64;
  const bool big = image[llvm::ELF::EI_DATA] == llvm::ELF::ELFDATA2MSB;
  if (is64) {
    return big ? visit.template operator()<llvm::object::ELF64BE>()
               : visit.template operator()<llvm::object::ELF64LE>();
  }
  return big ? visit.template operator()<llvm::object::ELF32BE>()
             : visit.template operator()<llvm::object::ELF32LE>();
}

}  // namespace pdfix::resolve
