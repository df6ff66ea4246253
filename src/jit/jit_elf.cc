#include "jit/jit_elf.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/ObjectYAML/yaml2obj.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"

namespace pdfix::jit {
namespace {

// Where the code starts: room for the headers and the build-id note before it, page-aligned as
// a linker would place text.
constexpr uint64_t kTextOffset = 0x1000;
constexpr uint64_t kNoteOffset = 0x200;
constexpr uint64_t kCodeAlign = 16;
constexpr uint32_t kEmNone = 0;

bool is_32_bit(uint32_t machine) {
  // EM_386, EM_MIPS, EM_PPC, EM_ARM: the JIT runtimes' 32-bit targets.
  return machine == 3 || machine == 8 || machine == 20 || machine == 40;
}

std::string header(uint32_t machine, bool big_endian) {
  return absl::StrCat(
      "--- !ELF\nFileHeader:\n  Class: ", is_32_bit(machine) ? "ELFCLASS32" : "ELFCLASS64",
      "\n  Data: ", big_endian ? "ELFDATA2MSB" : "ELFDATA2LSB", "\n  Type: ET_DYN\n  Machine: 0x",
      absl::Hex(machine), "\n");
}

// The sections and symbols after the headers; `text` describes .text, `symbols` .strtab and the
// symbols.
struct Body {
  std::string program_headers;
  std::string text;
  std::string symbols;
};

std::string note_section(const format::BuildId& id) {
  std::string desc;
  for (const uint8_t b : id.view()) absl::StrAppend(&desc, absl::Hex(b, absl::kZeroPad2));
  return absl::StrCat(
      "  - Name: .note.gnu.build-id\n    Type: SHT_NOTE\n    Flags: [ SHF_ALLOC ]\n",
      "    Address: 0x", absl::Hex(kNoteOffset), "\n    Offset: 0x", absl::Hex(kNoteOffset),
      "\n    AddressAlign: 4\n    Notes:\n", "      - Name: GNU\n        Desc: ", desc,
      "\n        Type: NT_GNU_BUILD_ID\n");
}

format::BuildId sha1_id(const std::string& described,
                        std::span<const std::span<const uint8_t>> code) {
  llvm::SHA1 hash;
  hash.update(llvm::StringRef(described));
  for (const auto& piece : code) hash.update(llvm::ArrayRef<uint8_t>(piece.data(), piece.size()));
  const std::array<uint8_t, 20> digest = hash.final();
  return *format::BuildId::from_bytes(digest);
}

absl::StatusOr<std::vector<uint8_t>> emit(const std::string& yaml) {
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  std::string errors;
  llvm::yaml::Input input(yaml);
  const bool ok = llvm::yaml::convertYAML(input, os, [&errors](const llvm::Twine& message) {
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", message.str());
  });
  if (!ok) return absl::InternalError("writing the JIT code's ELF file: " + errors);
  return std::vector<uint8_t>(out.begin(), out.end());
}

absl::StatusOr<ElfImage> build(uint32_t machine, bool big_endian, const Body& body,
                               std::span<const std::span<const uint8_t>> code) {
  const std::string described =
      absl::StrCat(header(machine, big_endian), body.program_headers, body.text, body.symbols);
  ElfImage image{.id = sha1_id(described, code)};
  auto bytes = emit(absl::StrCat(header(machine, big_endian), body.program_headers, "Sections:\n",
                                 note_section(image.id), body.text, body.symbols));
  if (!bytes.ok()) return bytes.status();
  image.bytes = std::move(*bytes);
  return image;
}

std::string program_headers(uint64_t load_vaddr, uint64_t load_offset, uint64_t file_size,
                            uint64_t mem_size) {
  return absl::StrCat(
      "ProgramHeaders:\n  - Type: PT_LOAD\n    Flags: [ PF_R, PF_X ]\n    FirstSec: .text\n"
      "    LastSec: .text\n    VAddr: 0x",
      absl::Hex(load_vaddr), "\n    Offset: 0x", absl::Hex(load_offset), "\n    FileSize: 0x",
      absl::Hex(file_size), "\n    MemSize: 0x", absl::Hex(mem_size),
      "\n    Align: 0x1000\n  - Type: PT_NOTE\n    Flags: [ PF_R ]\n    VAddr: 0x",
      absl::Hex(kNoteOffset),
      "\n"
      "    FirstSec: .note.gnu.build-id\n    LastSec: .note.gnu.build-id\n");
}

// The symbols and their string table, which is given as bytes: names repeat (a function compiled
// again), which the emitter refuses for named symbols, and may be any bytes.
class SymbolTable {
 public:
  void add(std::string_view name, uint64_t value, uint64_t size) {
    absl::StrAppend(&symbols_, "  - StName: ", strtab_.size(),
                    "\n    Type: STT_FUNC\n    Section: .text\n    Binding: STB_LOCAL\n"
                    "    Value: 0x",
                    absl::Hex(value), "\n    Size: 0x", absl::Hex(size), "\n");
    strtab_.append(name);
    strtab_ += '\0';
  }
  std::string yaml() const {
    std::string hex;
    hex.reserve(strtab_.size() * 2);
    for (const char c : strtab_) {
      absl::StrAppend(&hex, absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
    return absl::StrCat("  - Name: .strtab\n    Type: SHT_STRTAB\n    Content: ", hex,
                        "\nSymbols:\n", symbols_);
  }

 private:
  std::string symbols_;
  std::string strtab_ = std::string(1, '\0');
};

}  // namespace

absl::StatusOr<DumpImage> dump_image(const JitDump& dump) {
  DumpImage image;
  uint64_t end = 0;
  SymbolTable symbols;
  std::vector<std::span<const uint8_t>> code;
  for (const CodeLoad& l : dump.loads) {
    const uint64_t at = (end + kCodeAlign - 1) / kCodeAlign * kCodeAlign;
    image.offsets.push_back(kTextOffset + at);
    symbols.add(l.name, kTextOffset + at, l.code.size());
    code.push_back(l.code);
    end = at + l.code.size();
  }
  const uint32_t machine = dump.elf_machine != kEmNone ? dump.elf_machine : 62;
  const bool big_endian = dump.swapped == (std::endian::native == std::endian::little);
  const Body body{
      .program_headers = program_headers(0, 0, kTextOffset + end, kTextOffset + end),
      .text = absl::StrCat("  - Name: .text\n    Type: SHT_PROGBITS\n"
                           "    Flags: [ SHF_ALLOC, SHF_EXECINSTR ]\n    Address: 0x",
                           absl::Hex(kTextOffset), "\n    Offset: 0x", absl::Hex(kTextOffset),
                           "\n    AddressAlign: 0x", absl::Hex(kCodeAlign), "\n    Size: 0x",
                           absl::Hex(end), "\n"),
      .symbols = symbols.yaml()};
  auto elf = build(machine, big_endian, body, code);
  if (!elf.ok()) return elf.status();
  image.elf = std::move(*elf);
  // The emitter wrote .text as zeros where it was told: the code goes in place.
  if (image.elf.bytes.size() < kTextOffset + end) {
    return absl::InternalError("the JIT code's ELF file is shorter than its code");
  }
  for (size_t i = 0; i < dump.loads.size(); ++i) {
    const auto code_bytes = dump.loads[i].code;
    if (!code_bytes.empty()) {
      std::memcpy(image.elf.bytes.data() + image.offsets[i], code_bytes.data(), code_bytes.size());
    }
  }
  return image;
}

uint64_t SymbolImage::offset_of(uint64_t address) const { return kTextOffset + (address - base); }

absl::StatusOr<SymbolImage> symbol_image(std::span<const MapSymbol> symbols, uint16_t elf_machine,
                                         bool big_endian) {
  if (symbols.empty()) return absl::InvalidArgumentError("a map file without symbols");
  SymbolImage image;
  uint64_t hi = 0;
  image.base = UINT64_MAX;
  for (const MapSymbol& s : symbols) {
    image.base = std::min(image.base, s.start & ~(kTextOffset - 1));
    hi = std::max(hi, s.start + s.size);
  }
  SymbolTable listed;
  for (const MapSymbol& s : symbols) listed.add(s.name, image.offset_of(s.start), s.size);
  const uint64_t size = hi - image.base;
  const Body body{
      .program_headers = program_headers(kTextOffset, kTextOffset, 0, size),
      .text = absl::StrCat("  - Name: .text\n    Type: SHT_NOBITS\n"
                           "    Flags: [ SHF_ALLOC, SHF_EXECINSTR ]\n    Address: 0x",
                           absl::Hex(kTextOffset), "\n    Offset: 0x", absl::Hex(kTextOffset),
                           "\n    Size: 0x", absl::Hex(size), "\n"),
      .symbols = listed.yaml()};
  auto elf = build(elf_machine, big_endian, body, {});
  if (!elf.ok()) return elf.status();
  image.elf = std::move(*elf);
  return image;
}

}  // namespace pdfix::jit
