// Slim copies (store/slim_elf.h): which sections keep their bytes, and that the copy of a real
// ELF file (this test program, built with symbols, unwind tables and debug information) keeps
// every header and offset, the kept sections' bytes, and its build-id, and none of its code.
#include "store/slim_elf.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/elf_build_id.h"

namespace pdfix::store {
namespace {

namespace elf = llvm::ELF;

SectionFacts alloc(std::string_view name, uint32_t type = elf::SHT_PROGBITS) {
  return {.name = name, .type = type, .flags = elf::SHF_ALLOC};
}

TEST(SlimKeeps, WhatReadersNameAndUnwindWith) {
  const SlimOptions with_unwind{.unwind_tables = true};
  const SlimOptions without_unwind{.unwind_tables = false};
  EXPECT_TRUE(slim_keeps(alloc(".dynsym", elf::SHT_DYNSYM), with_unwind));
  EXPECT_TRUE(slim_keeps({.name = ".dynstr",
                          .type = elf::SHT_STRTAB,
                          .flags = elf::SHF_ALLOC,
                          .names_of_dynsym = true},
                         with_unwind));
  // A string table of the same type that .dynsym does not name is data like any other.
  EXPECT_FALSE(slim_keeps(alloc(".strings", elf::SHT_STRTAB), with_unwind));
  EXPECT_TRUE(slim_keeps(alloc(".note.gnu.build-id", elf::SHT_NOTE), without_unwind));
  EXPECT_TRUE(slim_keeps(alloc(".eh_frame", elf::SHT_X86_64_UNWIND), with_unwind));
  EXPECT_TRUE(slim_keeps(alloc(".eh_frame_hdr"), with_unwind));
  EXPECT_FALSE(slim_keeps(alloc(".eh_frame"), without_unwind));
  EXPECT_FALSE(slim_keeps(alloc(".eh_frame_hdr"), without_unwind));
  EXPECT_FALSE(slim_keeps({.name = ".debug_frame", .type = elf::SHT_PROGBITS}, without_unwind));
  EXPECT_TRUE(slim_keeps({.name = ".debug_frame", .type = elf::SHT_PROGBITS}, with_unwind));
  // perf's @plt names.
  EXPECT_TRUE(slim_keeps(alloc(".rela.plt", elf::SHT_RELA), without_unwind));
  EXPECT_TRUE(slim_keeps(alloc(".plt"), without_unwind));
  EXPECT_FALSE(slim_keeps(alloc(".rela.dyn", elf::SHT_RELA), with_unwind));
  SectionFacts rela_dyn = alloc(".rela.dyn", elf::SHT_RELA);
  rela_dyn.plt_got = true;
  EXPECT_TRUE(slim_keeps(rela_dyn, with_unwind));
  // Go's function table.
  EXPECT_TRUE(slim_keeps(alloc(".gopclntab"), without_unwind));
  // Code and data.
  for (const char* name : {".text", ".rodata", ".data", ".init", ".data.rel.ro", ".gnu.hash"}) {
    EXPECT_FALSE(slim_keeps(alloc(name), with_unwind)) << name;
  }
  // Not loaded: symbols, debug information, the debug link; debugger-only tables left out.
  for (const char* name : {".symtab", ".strtab", ".debug_info", ".debug_line", ".debug_str",
                           ".debug_rnglists", ".gnu_debuglink", ".shstrtab"}) {
    EXPECT_TRUE(slim_keeps({.name = name, .type = elf::SHT_PROGBITS}, without_unwind)) << name;
  }
  for (const char* name : {".debug_loclists", ".debug_loc", ".debug_macro"}) {
    EXPECT_FALSE(slim_keeps({.name = name, .type = elf::SHT_PROGBITS}, with_unwind)) << name;
  }
}

std::vector<uint8_t> materialise(const FileImage& image) {
  std::vector<uint8_t> out(image.size);
  for (const Piece& p : image.pieces) {
    std::copy(p.bytes.begin(), p.bytes.end(), out.begin() + static_cast<ptrdiff_t>(p.offset));
  }
  return out;
}

// This test program: a real ELF file, with symbols, unwind tables and, as built, debug information.
std::unique_ptr<llvm::MemoryBuffer> this_program() {
  auto buffer = llvm::MemoryBuffer::getFile("/proc/self/exe", /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(buffer);
  return buffer ? std::move(*buffer) : llvm::MemoryBuffer::getMemBuffer("");
}

std::span<const uint8_t> bytes_of(const llvm::MemoryBuffer& b) {
  return {reinterpret_cast<const uint8_t*>(b.getBufferStart()), b.getBufferSize()};
}

TEST(SlimElf, KeepsEveryOffsetAndNoCode) {
  const auto program = this_program();
  const std::span<const uint8_t> file = bytes_of(*program);
  auto slim = slim_elf(file, {.unwind_tables = true});
  ASSERT_TRUE(slim.ok()) << slim.status();
  const SlimElf& s = **slim;
  EXPECT_EQ(s.image.size, file.size());
  EXPECT_TRUE(s.image.sparse());
  EXPECT_EQ(s.kept + s.left_out, file.size());
  uint64_t at = 0;
  for (const Piece& p : s.image.pieces) {
    EXPECT_GE(p.offset, at) << "pieces overlap or are out of order";
    at = p.offset + p.bytes.size();
  }
  EXPECT_LE(at, file.size());

  const std::vector<uint8_t> copy = materialise(s.image);
  auto original = llvm::object::ELF64LEFile::create(
      llvm::StringRef(reinterpret_cast<const char*>(file.data()), file.size()));
  auto slimmed = llvm::object::ELF64LEFile::create(
      llvm::StringRef(reinterpret_cast<const char*>(copy.data()), copy.size()));
  ASSERT_TRUE(original && slimmed);
  EXPECT_EQ(0, std::memcmp(copy.data(), file.data(), sizeof(llvm::object::ELF64LE::Ehdr)));
  auto before = original->sections();
  auto after = slimmed->sections();
  ASSERT_TRUE(before && after);
  ASSERT_EQ(before->size(), after->size());
  std::map<std::string, uint32_t> types;
  for (size_t i = 1; i < before->size(); ++i) {
    const auto& b = (*before)[i];
    const auto& a = (*after)[i];
    const std::string name = llvm::cantFail(original->getSectionName(b)).str();
    types[name] = a.sh_type;
    EXPECT_EQ(a.sh_offset, b.sh_offset) << name;
    EXPECT_EQ(a.sh_addr, b.sh_addr) << name;
    EXPECT_EQ(a.sh_size, b.sh_size) << name;
    if (a.sh_type == elf::SHT_NOBITS || b.sh_type == elf::SHT_NOBITS) continue;
    EXPECT_EQ(a.sh_type, b.sh_type) << name;
    EXPECT_EQ(0, std::memcmp(copy.data() + b.sh_offset, file.data() + b.sh_offset, b.sh_size))
        << name;
  }
  for (const char* kept :
       {".dynsym", ".dynstr", ".eh_frame", ".eh_frame_hdr", ".note.gnu.build-id"}) {
    ASSERT_TRUE(types.count(kept)) << kept;
    EXPECT_NE(types[kept], elf::SHT_NOBITS) << kept;
  }
  // As the build made this program: with symbols and debug information, or without.
  for (const char* kept : {".symtab", ".strtab", ".debug_info", ".debug_line"}) {
    if (types.count(kept)) {
      EXPECT_NE(types[kept], elf::SHT_NOBITS) << kept;
    }
  }
  for (const char* gone : {".text", ".rodata", ".data", ".gnu.hash"}) {
    ASSERT_TRUE(types.count(gone)) << gone;
    EXPECT_EQ(types[gone], elf::SHT_NOBITS) << gone;
  }
  // Where the code was, zeros.
  for (const auto& b : *before) {
    if (llvm::cantFail(original->getSectionName(b)) != ".text") continue;
    EXPECT_TRUE(std::all_of(copy.begin() + static_cast<ptrdiff_t>(b.sh_offset),
                            copy.begin() + static_cast<ptrdiff_t>(b.sh_offset + b.sh_size),
                            [](uint8_t c) { return c == 0; }));
  }
  auto id = resolve::build_id_of_elf(file);
  ASSERT_TRUE(id.ok() && id->has_value());
  EXPECT_TRUE(resolve::carries_build_id(copy, **id));
}

TEST(SlimElf, LeavesOutUnwindTablesWhenAsked) {
  const auto program = this_program();
  const std::span<const uint8_t> file = bytes_of(*program);
  auto with = slim_elf(file, {.unwind_tables = true});
  auto without = slim_elf(file, {.unwind_tables = false});
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_LT((*without)->kept, (*with)->kept);
}

TEST(SlimElf, RefusesWhatIsNotAWholeElfFile) {
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_FALSE(slim_elf(text, {}).ok());
  const auto program = this_program();
  // Cut before its section headers (at the end of the file): refused, not read past.
  const std::span<const uint8_t> cut = bytes_of(*program).first(program->getBufferSize() / 2);
  EXPECT_FALSE(slim_elf(cut, {}).ok());
  // Without section headers (as sstrip leaves a program): refused, so it is kept whole.
  std::vector<uint8_t> headless(program->getBufferStart(), program->getBufferEnd());
  auto* header = reinterpret_cast<llvm::object::ELF64LE::Ehdr*>(headless.data());
  header->e_shoff = 0;
  header->e_shnum = 0;
  header->e_shstrndx = 0;
  EXPECT_FALSE(slim_elf(headless, {}).ok());
}

}  // namespace
}  // namespace pdfix::store
