// Where build-ids come from: ELF notes (plain and compressed, every class and byte order), and
// what a map's file name says it maps.
#include "resolve/elf_build_id.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>

#include "absl/status/status.h"
#include "fixture/fake_host.h"
#include "fixture/resolve_files.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "resolve/id_memory.h"
#include "resolve/mountinfo.h"
#include "resolve/proc_modules.h"
#include "resolve/resolver.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

TEST_F(ResolveFiles, ElfNoteMatchesReadelf) {
  auto buf = read_maybe_compressed(dir_ + "/prog");
  ASSERT_TRUE(buf.ok());
  llvm::StringRef b = (*buf)->getBuffer();
  auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(id->has_value());
  EXPECT_EQ((*id)->hex(), expected_);
}

TEST_F(ResolveFiles, CompressedModulesAreOpened) {
  for (const std::string tool : {"gzip", "xz", "zstd -q"}) {
    const std::string ext = tool == "gzip" ? ".gz" : tool == "xz" ? ".xz" : ".zst";
    ASSERT_EQ(std::system(("cd " + dir_ + " && " + tool + " -k -f prog").c_str()), 0) << tool;
    auto buf = read_maybe_compressed(dir_ + "/prog" + ext);
    ASSERT_TRUE(buf.ok()) << buf.status();
    llvm::StringRef b = (*buf)->getBuffer();
    auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
    ASSERT_TRUE(id.ok() && id->has_value()) << ext;
    EXPECT_EQ((*id)->hex(), expected_) << ext;
  }
}

TEST_F(ResolveFiles, NotElfAndNoNote) {
  std::ofstream(dir_ + "/text") << "just text\n";
  auto buf = read_maybe_compressed(dir_ + "/text");
  llvm::StringRef b = (*buf)->getBuffer();
  EXPECT_FALSE(build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()}).ok());
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id " + dir_ + "/prog " + dir_ +
                         "/stripped")
                            .c_str()),
            0);
  buf = read_maybe_compressed(dir_ + "/stripped");
  b = (*buf)->getBuffer();
  auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(id->has_value());
}

TEST_F(ResolveFiles, FileReadByNoteSegmentsAgreesWithTheWholeFile) {
  auto id = build_id_of_file(dir_ + "/prog");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(hex_of(*id), expected_);
  for (const std::string tool : {"gzip", "xz", "zstd -q"}) {
    const std::string ext = tool == "gzip" ? ".gz" : tool == "xz" ? ".xz" : ".zst";
    ASSERT_EQ(std::system(("cd " + dir_ + " && " + tool + " -k -f prog").c_str()), 0) << tool;
    auto packed = build_id_of_file(dir_ + "/prog" + ext);
    ASSERT_TRUE(packed.ok()) << packed.status();
    EXPECT_EQ(hex_of(*packed), expected_) << ext;
  }
  // Without a build-id in its segments the file is read whole: a relocatable object keeps its
  // note in a section only, a stripped file has none.
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id " + dir_ + "/prog " + dir_ +
                         "/stripped")
                            .c_str()),
            0);
  auto none = build_id_of_file(dir_ + "/stripped");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  std::ofstream(dir_ + "/text") << "just text\n";
  EXPECT_TRUE(absl::IsInvalidArgument(build_id_of_file(dir_ + "/text").status()));
  EXPECT_TRUE(absl::IsNotFound(build_id_of_file(dir_ + "/absent").status()));
}

TEST_F(ResolveFiles, RelocatableObjectsAreReadBySection) {
  // Kernel modules are relocatable objects: no program headers, the note in a section.
  std::ofstream(dir_ + "/m.c") << "int f(void) { return 1; }\n";
  ASSERT_EQ(std::system(("cc -c -o " + dir_ + "/m0.o " + dir_ +
                         "/m.c && ld -r --build-id=sha1 -o " + dir_ + "/m.o " + dir_ + "/m0.o")
                            .c_str()),
            0);
  const std::string want = readelf_build_id(dir_ + "/m.o");
  ASSERT_FALSE(want.empty());
  auto id = build_id_of_file(dir_ + "/m.o");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(hex_of(*id), want);
}

// Every shared library of this machine (the files inject reads most): the few preads find what
// LLVM finds walking the whole file.
TEST(BuildIdOfFile, SystemLibrariesAgreeWithTheWholeFile) {
  size_t compared = 0;
  size_t with_id = 0;
  std::error_code ec;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/bin"}) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (compared >= 400) break;
      if (!e.is_regular_file(ec) || e.file_size(ec) > (64u << 20)) continue;
      auto whole = read_maybe_compressed(e.path());
      if (!whole.ok()) continue;
      llvm::StringRef b = (*whole)->getBuffer();
      auto want = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
      auto got = build_id_of_file(e.path());
      ASSERT_EQ(want.ok(), got.ok()) << e.path();
      if (!want.ok()) continue;
      EXPECT_EQ(hex_of(*got), hex_of(*want)) << e.path();
      ++compared;
      if (want->has_value()) ++with_id;
    }
  }
  EXPECT_GT(with_id, 50U) << "too few ELF files with a build-id to say anything";
}

// A linked ELF image of either class and byte order with a GNU property note (a 12-byte
// descriptor, padded to 16 in an 8-aligned segment) and the build-id note: after the property in
// the same 8-aligned segment, or in a 4-aligned segment of its own, as linkers lay them out.
std::vector<uint8_t> tiny_elf(bool is64, bool big, bool id_after_property,
                              const std::vector<uint8_t>& id) {
  std::vector<uint8_t> out;
  auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      const int shift = big ? (n - 1 - i) * 8 : i * 8;
      out.push_back(static_cast<uint8_t>(v >> shift));
    }
  };
  const int word = is64 ? 8 : 4;
  const uint64_t ehsize = is64 ? 64 : 52;
  const uint64_t phentsize = is64 ? 56 : 32;
  const uint64_t phnum = id_after_property ? 1 : 2;
  const uint64_t notes = (ehsize + phnum * phentsize + 7) / 8 * 8;
  const uint64_t property_size = 16 + 16;  // header and "GNU\0", a descriptor padded to 8
  const size_t id_align = id_after_property ? 8 : 4;
  const uint64_t id_size = 16 + (id.size() + id_align - 1) / id_align * id_align;
  out = {0x7f, 'E', 'L', 'F', static_cast<uint8_t>(is64 ? 2 : 1), static_cast<uint8_t>(big ? 2 : 1),
         1};
  out.resize(16, 0);
  put(2, 2);  // ET_EXEC
  put(is64 ? 62 : 3, 2);
  put(1, 4);
  put(0x400000, word);  // entry
  put(ehsize, word);    // phoff
  put(0, word);         // shoff, set below
  put(0, 4);
  put(ehsize, 2);
  put(phentsize, 2);
  put(phnum, 2);
  put(is64 ? 64 : 40, 2);
  put(0, 2);
  put(0, 2);
  auto phdr = [&](uint64_t offset, uint64_t size, uint64_t align) {
    put(4, 4);  // PT_NOTE
    if (is64) put(4, 4);
    put(offset, word);
    put(0x400000 + offset, word);
    put(0x400000 + offset, word);
    put(size, word);
    put(size, word);
    if (!is64) put(4, 4);
    put(align, word);
  };
  if (id_after_property) {
    phdr(notes, property_size + id_size, 8);
  } else {
    phdr(notes, property_size, 8);
    phdr(notes + property_size, id_size, 4);
  }
  auto note = [&](uint32_t type, const std::vector<uint8_t>& desc, size_t align) {
    put(4, 4);
    put(desc.size(), 4);
    put(type, 4);
    for (char c : {'G', 'N', 'U', '\0'}) out.push_back(static_cast<uint8_t>(c));
    out.insert(out.end(), desc.begin(), desc.end());
    out.resize((out.size() + align - 1) / align * align, 0);
  };
  out.resize(notes, 0);
  note(5, std::vector<uint8_t>(12, 0xab), 8);  // NT_GNU_PROPERTY_TYPE_0
  note(3, id, id_align);                       // NT_GNU_BUILD_ID
  // A note section outside every segment, with another id: what a whole-file reading (sections
  // first) finds, and the kernel does not.
  const uint64_t decoy_at = out.size();
  note(3, std::vector<uint8_t>(id.size(), 0xdd), 4);
  const uint64_t decoy_size = out.size() - decoy_at;
  out.resize((out.size() + 7) / 8 * 8, 0);
  const uint64_t shoff = out.size();
  out.resize(out.size() + (is64 ? 64 : 40), 0);  // the null section
  put(0, 4);
  put(7, 4);     // SHT_NOTE
  put(2, word);  // SHF_ALLOC
  put(0, word);
  put(decoy_at, word);
  put(decoy_size, word);
  put(0, 4);
  put(0, 4);
  put(4, word);
  put(0, word);
  auto patch = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      out[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (big ? (n - 1 - i) * 8 : i * 8));
    }
  };
  patch(24 + 2 * static_cast<size_t>(word), shoff, word);  // e_shoff
  patch(36 + 3 * static_cast<size_t>(word), 2, 2);         // e_shnum
  return out;
}

TEST_F(ResolveFiles, EveryClassAndByteOrderIsReadBySegment) {
  std::vector<uint8_t> id(20);
  std::iota(id.begin(), id.end(), 0x31);
  for (bool is64 : {false, true}) {
    for (bool big : {false, true}) {
      for (bool id_after_property : {false, true}) {
        const std::vector<uint8_t> image = tiny_elf(is64, big, id_after_property, id);
        const std::string path = dir_ + "/tiny";
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(image.data()),
                   static_cast<std::streamsize>(image.size()));
        auto got = build_id_of_file(path);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(got->has_value())
            << "64-bit " << is64 << ", big-endian " << big << ", one segment " << id_after_property;
        EXPECT_EQ((*got)->hex(), "3132333435363738393a3b3c3d3e3f4041424344");
        // Read whole, sections come first: the decoy, which no segment holds.
        auto whole = build_id_of_elf(image);
        ASSERT_TRUE(whole.ok() && whole->has_value());
        EXPECT_EQ((*whole)->hex(), std::string(40, 'd'));
      }
    }
  }
}

TEST(MapKind, ClassifiesMaps) {
  using format::classify;
  using format::MapKind;
  using format::module_name;
  EXPECT_EQ(classify("[kernel.kallsyms]_text", 1), MapKind::kKernel);
  EXPECT_EQ(classify("[guest.kernel.kallsyms.42]", 4), MapKind::kKernel);
  EXPECT_EQ(classify("/lib/modules/6.1.0/kernel/net/nf_tables.ko.xz", 1), MapKind::kModule);
  EXPECT_EQ(classify("[vdso]", 2), MapKind::kVdso);
  EXPECT_EQ(classify("//anon", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("[heap]", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("/memfd:jit (deleted)", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("/usr/lib/libc.so.6", 2), MapKind::kFile);
  EXPECT_EQ(module_name("/lib/modules/6.1.0/kernel/drivers/net/virtio-net.ko.zst"), "virtio_net");
  EXPECT_EQ(module_name("[qeth_l2]"), "qeth_l2");
}

}  // namespace
}  // namespace pdfix::resolve

namespace pdfix::resolve {
namespace {

TEST_F(ResolveFiles, AnIdRememberedIsReadAgainOnlyWhenItsFileChanged) {
  IdMemory memory;
  const std::string prog = dir_ + "/prog";
  EXPECT_EQ(hex_of(*memory.id_of(prog)), expected_);
  EXPECT_EQ(hex_of(*memory.id_of(prog)), expected_);
  EXPECT_EQ(memory.reads(), 1u);
  // Rewritten in place, as a linker does: the same inode, another program.
  const std::string other = readelf_build_id("/usr/bin/false");
  ASSERT_NE(other, expected_);
  struct stat st{};
  ASSERT_EQ(stat(prog.c_str(), &st), 0);
  const ino_t before = st.st_ino;
  {
    std::ifstream in("/usr/bin/false", std::ios::binary);
    std::ofstream out(prog, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  ASSERT_EQ(stat(prog.c_str(), &st), 0);
  ASSERT_EQ(st.st_ino, before);
  EXPECT_EQ(hex_of(*memory.id_of(prog)), other);
  EXPECT_EQ(memory.reads(), 2u);
  EXPECT_EQ(memory.size(), 2u);
}

}  // namespace
}  // namespace pdfix::resolve
