#include "jit/jit_elf.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "format/byte_order.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/ObjectYAML/DWARFEmitter.h"
#include "llvm/ObjectYAML/DWARFYAML.h"
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

// The YAML after the file header: the program headers, the sections after the build-id note, and
// the rest (symbols, DWARF units).
struct Body {
  std::string program_headers;
  std::string sections;
  std::string rest;
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
  // The parser's own messages go with the emitter's into the error, not to stderr.
  llvm::yaml::Input input(
      yaml, nullptr,
      [](const llvm::SMDiagnostic& d, void* context) {
        auto& out = *static_cast<std::string*>(context);
        absl::StrAppend(&out, out.empty() ? "" : "; ", d.getMessage().str());
      },
      &errors);
  const bool ok = llvm::yaml::convertYAML(input, os, [&errors](const llvm::Twine& message) {
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", message.str());
  });
  if (!ok || input.error()) {
    return absl::InternalError("writing the JIT code's ELF file: " + errors);
  }
  return std::vector<uint8_t>(out.begin(), out.end());
}

absl::StatusOr<ElfImage> build(uint32_t machine, bool big_endian, const Body& body,
                               std::span<const std::span<const uint8_t>> code) {
  const std::string described =
      absl::StrCat(header(machine, big_endian), body.program_headers, body.sections, body.rest);
  ElfImage image{.id = sha1_id(described, code)};
  auto bytes = emit(absl::StrCat(header(machine, big_endian), body.program_headers, "Sections:\n",
                                 note_section(image.id), body.sections, body.rest));
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

uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

llvm::Triple::ArchType triple_arch(uint32_t machine) {
  if (machine == 62) return llvm::Triple::x86_64;
  if (machine == 183) return llvm::Triple::aarch64;
  if (machine == 3) return llvm::Triple::x86;
  return llvm::Triple::UnknownArch;
}

// One .eh_frame of every load's: a runtime writes each load's unwinding table to follow its code
// in memory (.eh_frame at the code's size rounded up to 8, then .eh_frame_hdr), its FDEs' code
// addresses relative to their own fields. Here the tables sit together after .text: each FDE's
// address is read (by LLVM) where the table would have been, and written anew where it is.
class EhFrame {
 public:
  EhFrame(uint32_t machine, bool big_endian, uint64_t address)
      : arch_(triple_arch(machine)),
        e_(big_endian == (std::endian::native == std::endian::big) ? format::Endian::host()
                                                                   : format::Endian::swapped()),
        big_endian_(big_endian),
        address_(address) {}

  // The table of the load whose code is at `code_at`; tables LLVM cannot read, or whose FDE
  // addresses are not 4-byte pc-relative (all runtimes' are), are left out.
  void add(const CodeLoad& l, uint64_t code_at) {
    if (l.unwinding.size() <= l.eh_frame_hdr_size) return;
    const auto table = l.unwinding.first(l.unwinding.size() - l.eh_frame_hdr_size);
    // Up to the terminator, a zero length.
    uint64_t end = 0;
    while (end + 4 <= table.size()) {
      const uint32_t length = e_.u32(table.data() + end);
      if (length == 0 || length == UINT32_MAX || length > table.size() - end - 4) break;
      end += 4 + length;
    }
    if (end == 0) return;
    const uint64_t was_at = code_at + align8(l.code.size());
    llvm::DWARFDebugFrame frame(arch_, /*IsEH=*/true, was_at);
    const llvm::StringRef bytes(reinterpret_cast<const char*>(table.data()), end);
    if (llvm::Error err = frame.parse(llvm::DWARFDataExtractor(bytes, !big_endian_, 8))) {
      llvm::consumeError(std::move(err));
      return;
    }
    std::vector<uint8_t> copy(table.begin(), table.begin() + static_cast<ptrdiff_t>(end));
    const uint64_t now_at = address_ + bytes_.size();
    std::vector<std::pair<uint64_t, uint64_t>> fdes;
    for (const llvm::dwarf::FrameEntry& entry : frame.entries()) {
      const auto* fde = llvm::dyn_cast<llvm::dwarf::FDE>(&entry);
      if (fde == nullptr) continue;
      if (fde->getLinkedCIE() == nullptr ||
          fde->getLinkedCIE()->getFDEPointerEncoding() !=
              (llvm::dwarf::DW_EH_PE_pcrel | llvm::dwarf::DW_EH_PE_sdata4)) {
        return;
      }
      // Length, CIE pointer, then the address.
      const uint64_t field = fde->getOffset() + 8;
      const auto relative = static_cast<int64_t>(fde->getInitialLocation() - (now_at + field));
      if (field + 4 > copy.size() || relative < INT32_MIN || relative > INT32_MAX) return;
      e_.put_u32(copy.data() + field, static_cast<uint32_t>(relative));
      fdes.emplace_back(fde->getInitialLocation(), now_at + fde->getOffset());
    }
    bytes_.insert(bytes_.end(), copy.begin(), copy.end());
    fdes_.insert(fdes_.end(), fdes.begin(), fdes.end());
  }
  // The section: the tables and a terminator; empty when no load had one.
  std::vector<uint8_t> finish() {
    if (!bytes_.empty()) bytes_.resize(bytes_.size() + 4, 0);
    return std::move(bytes_);
  }
  // .eh_frame_hdr at `at`, for unwinders that find FDEs only through it (libunwind, which perf
  // uses): the .eh_frame's address and a table of every FDE by the address it covers, sorted.
  std::vector<uint8_t> header(uint64_t at) {
    std::sort(fdes_.begin(), fdes_.end());
    std::vector<uint8_t> hdr(12 + 8 * fdes_.size());
    hdr[0] = 1;                                                             // version
    hdr[1] = llvm::dwarf::DW_EH_PE_pcrel | llvm::dwarf::DW_EH_PE_sdata4;    // .eh_frame's address
    hdr[2] = llvm::dwarf::DW_EH_PE_udata4;                                  // the count
    hdr[3] = llvm::dwarf::DW_EH_PE_datarel | llvm::dwarf::DW_EH_PE_sdata4;  // the table
    e_.put_u32(hdr.data() + 4, static_cast<uint32_t>(address_ - (at + 4)));
    e_.put_u32(hdr.data() + 8, static_cast<uint32_t>(fdes_.size()));
    for (size_t i = 0; i < fdes_.size(); ++i) {
      e_.put_u32(hdr.data() + 12 + 8 * i, static_cast<uint32_t>(fdes_[i].first - at));
      e_.put_u32(hdr.data() + 16 + 8 * i, static_cast<uint32_t>(fdes_[i].second - at));
    }
    return hdr;
  }

 private:
  llvm::Triple::ArchType arch_;
  format::Endian e_;
  bool big_endian_;
  uint64_t address_;
  std::vector<uint8_t> bytes_;
  std::vector<std::pair<uint64_t, uint64_t>> fdes_;  // code address, FDE address
};

// The loads' JIT_CODE_DEBUG_INFO as DWARF: a line program with a sequence per load, its rows at
// the load's offsets here, and a compile unit whose ranges are those loads' code only (an address
// of code without lines is then in no unit, and readers say so). The line program and the ranges
// can be large (a row per line of every function): LLVM's DWARF emitter writes them from its
// structures, not through YAML.
class LineTable {
 public:
  LineTable(bool is_32_bit, bool big_endian)
      : address_size_(is_32_bit ? 4 : 8), big_endian_(big_endian) {
    table_.Format = llvm::dwarf::DWARF32;
    table_.Version = 4;
    table_.MinInstLength = 1;
    table_.MaxOpsPerInst = 1;
    table_.DefaultIsStmt = 1;
    table_.LineBase = static_cast<uint8_t>(-5);
    table_.LineRange = 14;
    table_.OpcodeBase = 13;
  }

  void add(const CodeLoad& l, uint64_t code_at, const DebugInfo& info) {
    bool begun = false;
    uint32_t line = 1;
    uint32_t file = 1;
    uint64_t at = code_at;
    for (const LineEntry& e : info.entries) {
      if (e.addr < l.code_addr || e.addr - l.code_addr >= l.code.size() || e.line == 0) continue;
      const uint64_t address = code_at + (e.addr - l.code_addr);
      if (!begun) {
        extended(llvm::dwarf::DW_LNE_set_address, address_size_ + 1, address);
        begun = true;
      } else if (address > at) {
        standard(llvm::dwarf::DW_LNS_advance_pc, address - at);
      } else if (address < at) {
        continue;  // rows go up in address within a sequence
      }
      at = address;
      auto [it, added] = files_.try_emplace(std::string(e.file), files_.size() + 1);
      if (added) file_names_.push_back(&it->first);
      if (it->second != file) {
        file = it->second;
        standard(llvm::dwarf::DW_LNS_set_file, file);
      }
      if (e.line != line) {
        llvm::DWARFYAML::LineTableOpcode op{};
        op.Opcode = llvm::dwarf::DW_LNS_advance_line;
        op.SData = static_cast<int64_t>(e.line) - line;
        table_.Opcodes.push_back(op);
        line = e.line;
      }
      standard(llvm::dwarf::DW_LNS_copy, 0);
    }
    if (!begun) return;
    ranges_.push_back({llvm::yaml::Hex64(code_at), llvm::yaml::Hex64(code_at + l.code.size())});
    standard(llvm::dwarf::DW_LNS_advance_pc, code_at + l.code.size() - at);
    extended(llvm::dwarf::DW_LNE_end_sequence, 1, 0);
  }

  // The .debug_line and .debug_ranges sections as YAML entries (their bytes by LLVM's emitter),
  // and the DWARF key with the unit that names them; both empty when no load had lines.
  absl::StatusOr<std::pair<std::string, std::string>> yaml() {
    if (ranges_.empty()) return std::pair<std::string, std::string>();
    for (const std::string* name : file_names_) table_.Files.push_back({*name, 0, 0, 0});
    llvm::DWARFYAML::Data lines;
    lines.IsLittleEndian = !big_endian_;
    lines.Is64BitAddrSize = address_size_ == 8;
    lines.DebugLines.push_back(table_);
    lines.DebugRanges.emplace();
    lines.DebugRanges->push_back({.Offset = llvm::yaml::Hex64(0),
                                  .AddrSize = llvm::yaml::Hex8(address_size_),
                                  .Entries = ranges_});
    std::string line_bytes;
    std::string range_bytes;
    llvm::raw_string_ostream line_out(line_bytes);
    llvm::raw_string_ostream range_out(range_bytes);
    if (llvm::Error err = llvm::DWARFYAML::emitDebugLine(line_out, lines)) {
      return absl::InternalError("writing the JIT code's line table: " +
                                 llvm::toString(std::move(err)));
    }
    if (llvm::Error err = llvm::DWARFYAML::emitDebugRanges(range_out, lines)) {
      return absl::InternalError("writing the JIT code's ranges: " +
                                 llvm::toString(std::move(err)));
    }
    auto section = [](const char* name, const std::string& bytes) {
      std::string hex;
      hex.reserve(bytes.size() * 2);
      for (const char c : bytes) {
        absl::StrAppend(&hex, absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
      }
      return absl::StrCat("  - Name: ", name, "\n    Type: SHT_PROGBITS\n    Content: ", hex, "\n");
    };
    return std::pair<std::string, std::string>(
        absl::StrCat(section(".debug_line", line_bytes), section(".debug_ranges", range_bytes)),
        absl::StrCat(
            "DWARF:\n  debug_abbrev:\n    - Table:\n        - Code: 1\n"
            "          Tag: DW_TAG_compile_unit\n          Children: DW_CHILDREN_no\n"
            "          Attributes:\n"
            "            - Attribute: DW_AT_name\n              Form: DW_FORM_string\n"
            "            - Attribute: DW_AT_stmt_list\n              Form: DW_FORM_sec_offset\n"
            "            - Attribute: DW_AT_low_pc\n              Form: DW_FORM_addr\n"
            "            - Attribute: DW_AT_ranges\n              Form: DW_FORM_sec_offset\n"
            "  debug_info:\n    - Version: 4\n      AddrSize: ",
            address_size_,
            "\n      Entries:\n        - AbbrCode: 1\n          Values:\n"
            "            - CStr: \"JIT code\"\n            - Value: 0\n            - Value: 0\n"
            "            - Value: 0\n"));
  }

 private:
  void standard(llvm::dwarf::LineNumberOps opcode, uint64_t data) {
    llvm::DWARFYAML::LineTableOpcode op{};
    op.Opcode = opcode;
    op.Data = data;
    table_.Opcodes.push_back(op);
  }
  void extended(llvm::dwarf::LineNumberExtendedOps sub, uint64_t length, uint64_t data) {
    llvm::DWARFYAML::LineTableOpcode op{};
    op.Opcode = llvm::dwarf::DW_LNS_extended_op;
    op.ExtLen = length;
    op.SubOpcode = sub;
    op.Data = data;
    table_.Opcodes.push_back(op);
  }

  uint8_t address_size_;
  bool big_endian_;
  llvm::DWARFYAML::LineTable table_{};
  std::vector<llvm::DWARFYAML::RangeEntry> ranges_;  // each load's code with lines
  std::map<std::string, uint32_t> files_;
  std::vector<const std::string*> file_names_;  // by index, into files_
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
  const uint64_t eh_at = align8(kTextOffset + end);
  EhFrame eh(machine, big_endian, eh_at);
  for (size_t i = 0; i < dump.loads.size(); ++i) eh.add(dump.loads[i], image.offsets[i]);
  const std::vector<uint8_t> eh_frame = eh.finish();
  const uint64_t hdr_at = align8(eh_at + eh_frame.size());
  const std::vector<uint8_t> eh_frame_hdr =
      eh_frame.empty() ? std::vector<uint8_t>() : eh.header(hdr_at);
  LineTable lines(is_32_bit(machine), big_endian);
  for (size_t i = 0; i < dump.loads.size(); ++i) {
    if (dump.loads[i].lines) {
      lines.add(dump.loads[i], image.offsets[i], dump.debug_info[*dump.loads[i].lines]);
    }
  }
  auto line_sections = lines.yaml();
  if (!line_sections.ok()) return line_sections.status();
  code.emplace_back(eh_frame);
  code.emplace_back(eh_frame_hdr);
  const uint64_t file_end = eh_frame.empty() ? kTextOffset + end : hdr_at + eh_frame_hdr.size();
  std::string sections = absl::StrCat(
      "  - Name: .text\n    Type: SHT_PROGBITS\n"
      "    Flags: [ SHF_ALLOC, SHF_EXECINSTR ]\n    Address: 0x",
      absl::Hex(kTextOffset), "\n    Offset: 0x", absl::Hex(kTextOffset), "\n    AddressAlign: 0x",
      absl::Hex(kCodeAlign), "\n    Size: 0x", absl::Hex(end), "\n");
  if (!eh_frame.empty()) {
    absl::StrAppend(&sections,
                    "  - Name: .eh_frame\n    Type: SHT_PROGBITS\n    Flags: [ SHF_ALLOC ]\n"
                    "    Address: 0x",
                    absl::Hex(eh_at), "\n    Offset: 0x", absl::Hex(eh_at),
                    "\n    AddressAlign: 8\n    Size: 0x", absl::Hex(eh_frame.size()), "\n",
                    "  - Name: .eh_frame_hdr\n    Type: SHT_PROGBITS\n    Flags: [ SHF_ALLOC ]\n"
                    "    Address: 0x",
                    absl::Hex(hdr_at), "\n    Offset: 0x", absl::Hex(hdr_at),
                    "\n    AddressAlign: 4\n    Size: 0x", absl::Hex(eh_frame_hdr.size()), "\n");
  }
  std::string headers = program_headers(0, 0, file_end, file_end);
  if (!eh_frame.empty()) {
    absl::StrAppend(&headers, "  - Type: PT_GNU_EH_FRAME\n    Flags: [ PF_R ]\n    VAddr: 0x",
                    absl::Hex(hdr_at),
                    "\n    FirstSec: .eh_frame_hdr\n    LastSec: .eh_frame_hdr\n");
  }
  const Body body{
      .program_headers = headers,
      .sections = sections,
      .rest = absl::StrCat(line_sections->first, symbols.yaml(), line_sections->second)};
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
  if (!eh_frame.empty()) {
    if (image.elf.bytes.size() < file_end) {
      return absl::InternalError("the JIT code's ELF file is shorter than its .eh_frame");
    }
    std::memcpy(image.elf.bytes.data() + eh_at, eh_frame.data(), eh_frame.size());
    std::memcpy(image.elf.bytes.data() + hdr_at, eh_frame_hdr.data(), eh_frame_hdr.size());
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
      .sections = absl::StrCat("  - Name: .text\n    Type: SHT_NOBITS\n"
                               "    Flags: [ SHF_ALLOC, SHF_EXECINSTR ]\n    Address: 0x",
                               absl::Hex(kTextOffset), "\n    Offset: 0x", absl::Hex(kTextOffset),
                               "\n    Size: 0x", absl::Hex(size), "\n"),
      .rest = listed.yaml()};
  auto elf = build(elf_machine, big_endian, body, {});
  if (!elf.ok()) return elf.status();
  image.elf = std::move(*elf);
  return image;
}

}  // namespace pdfix::jit
