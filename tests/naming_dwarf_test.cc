// The DWARF read for naming (profile/naming_dwarf.h) names addresses as LLVM's own reader of the
// whole file names them: functions, inline frames, files, lines and columns, for every function
// of the C library's debug file (Debian's libc6-dbg: compressed sections, DWARF 5, location
// lists), at its first byte and inside it.
#include "profile/naming_dwarf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/Object/Binary.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "resolve/elf_build_id.h"

namespace pdfix::profile {
namespace {

// This process's C library's debug file, where Debian's libc6-dbg puts it by build-id.
std::string this_libcs_debug_file() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos || line.find("/libc.so.6") == std::string::npos) continue;
    auto id = resolve::build_id_of_file(line.substr(slash));
    if (!id.ok() || !id->has_value()) return "";
    const std::string hex = (*id)->hex();
    return "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  }
  return "";
}

TEST(NamingDwarf, NamesTheCLibrarysAddressesAsLlvmsOwnReaderDoes) {
  const std::string path = this_libcs_debug_file();
  auto binary = llvm::object::createBinary(path);
  ASSERT_TRUE(static_cast<bool>(binary))
      << path << " (libc6-dbg): " << llvm::toString(binary.takeError());
  const auto* obj = llvm::dyn_cast<llvm::object::ObjectFile>(binary->getBinary());
  ASSERT_NE(obj, nullptr);
  size_t compressed = 0;
  for (const llvm::object::SectionRef& s : obj->sections()) compressed += s.isCompressed();
  ASSERT_GT(compressed, 3U) << "the debug file's sections are not compressed: nothing inflates";

  const std::unique_ptr<llvm::DIContext> ours = naming_dwarf(*obj);
  const std::unique_ptr<llvm::DIContext> llvms = llvm::DWARFContext::create(*obj);
  const llvm::DILineInfoSpecifier spec(
      llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath,
      llvm::DILineInfoSpecifier::FunctionNameKind::LinkageName);
  size_t functions = 0;
  size_t lines = 0;
  size_t inlined = 0;
  for (const llvm::object::SymbolRef& sym : obj->symbols()) {
    auto type = sym.getType();
    auto address = sym.getAddress();
    if (!type || !address || *type != llvm::object::SymbolRef::ST_Function || *address == 0) {
      if (!type) llvm::consumeError(type.takeError());
      if (!address) llvm::consumeError(address.takeError());
      continue;
    }
    ++functions;
    const uint64_t size = llvm::object::ELFSymbolRef(sym).getSize();
    for (const uint64_t at : {*address, *address + size / 2}) {
      const llvm::object::SectionedAddress where{at, llvm::object::SectionedAddress::UndefSection};
      const llvm::DIInliningInfo got = ours->getInliningInfoForAddress(where, spec);
      const llvm::DIInliningInfo want = llvms->getInliningInfoForAddress(where, spec);
      ASSERT_EQ(got.getNumberOfFrames(), want.getNumberOfFrames()) << std::hex << at;
      for (uint32_t i = 0; i < got.getNumberOfFrames(); ++i) {
        const llvm::DILineInfo& g = got.getFrame(i);
        const llvm::DILineInfo& w = want.getFrame(i);
        EXPECT_EQ(g.FunctionName, w.FunctionName) << std::hex << at << " frame " << i;
        EXPECT_EQ(g.FileName, w.FileName) << std::hex << at << " frame " << i;
        EXPECT_EQ(g.Line, w.Line) << std::hex << at << " frame " << i;
        EXPECT_EQ(g.Column, w.Column) << std::hex << at << " frame " << i;
        lines += g.Line > 0;
      }
      inlined += got.getNumberOfFrames() > 1;
    }
  }
  // Not a comparison of two empty answers: a C library's thousands of functions, with lines and
  // inline frames.
  EXPECT_GT(functions, 1000U);
  EXPECT_GT(lines, functions);
  EXPECT_GT(inlined, 100U);
}

// A compressed section whose header claims more than it can hold (a terabyte from some hundred
// kilobytes) is left out, not taken at its word: no memory asked for, no name from it.
TEST(NamingDwarf, ASectionClaimingMoreThanItCanHoldIsLeftOut) {
  const std::string path = this_libcs_debug_file();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(bytes.empty()) << path << " (libc6-dbg)";
  uint64_t function = 0;
  {
    auto obj = llvm::object::ObjectFile::createObjectFile(
        llvm::MemoryBufferRef(llvm::StringRef(bytes), "libc"));
    ASSERT_TRUE(static_cast<bool>(obj)) << llvm::toString(obj.takeError());
    bool patched = false;
    for (const llvm::object::SectionRef& s : (*obj)->sections()) {
      auto name = s.getName();
      auto data = s.getContents();
      ASSERT_TRUE(name && data);
      if (*name != ".debug_info") continue;
      ASSERT_TRUE(s.isCompressed());
      // Elf64_Chdr: ch_type, ch_reserved, then ch_size.
      const uint64_t claimed = uint64_t{1} << 40;
      std::memcpy(bytes.data() + (data->data() - bytes.data()) + 8, &claimed, sizeof claimed);
      patched = true;
    }
    ASSERT_TRUE(patched);
    for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
      auto type = sym.getType();
      auto address = sym.getAddress();
      ASSERT_TRUE(type && address);
      if (*type == llvm::object::SymbolRef::ST_Function && *address != 0) function = *address;
    }
  }
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes), "libc"));
  ASSERT_TRUE(static_cast<bool>(obj)) << llvm::toString(obj.takeError());
  const std::unique_ptr<llvm::DIContext> ours = naming_dwarf(**obj);
  const llvm::DIInliningInfo got = ours->getInliningInfoForAddress(
      {function, llvm::object::SectionedAddress::UndefSection},
      llvm::DILineInfoSpecifier(llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath,
                                llvm::DILineInfoSpecifier::FunctionNameKind::LinkageName));
  EXPECT_EQ(got.getNumberOfFrames(), 0U);
}

}  // namespace
}  // namespace pdfix::profile
