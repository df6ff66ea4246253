#include "jit/jit_elf.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string>
#include <string_view>

#include "format/arch.h"
#include "format/byte_order.h"
#include "jit/elf_writer.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/ObjectYAML/DWARFYAML.h"
#include "llvm/Support/Error.h"

namespace pdfix::jit {
namespace {

// Where the code starts: room for the headers and the build-id note before it, page-aligned as
// a linker would place text.
constexpr uint64_t kTextOffset = 0x1000;
// The line table's name for a file a dump left unnamed.
constexpr std::string_view kUnnamedFile = "<unnamed>";
constexpr uint64_t kCodeAlign = 16;

uint64_t align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// One .eh_frame of every load's: a runtime writes each load's unwinding table to follow its code
// in memory (.eh_frame at the code's size rounded up to 8, then .eh_frame_hdr), its FDEs' code
// addresses relative to their own fields. Here the tables sit together after .text: each FDE's
// address is read (by LLVM) where the table would have been, and written anew where it is.
class EhFrame {
 public:
  EhFrame(const format::ArchFacts* arch, bool big_endian, uint64_t address)
      : arch_(arch != nullptr ? arch->triple : llvm::Triple::UnknownArch),
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
// of code without lines is then in no unit, and readers say so).
class LineTable {
 public:
  explicit LineTable(bool is_32_bit) : address_size_(is_32_bit ? 4 : 8) {
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
      // An empty name ends a DWARF 4 line table's list of files: every file after it would be
      // lost (V8 writes one now and then).
      auto [it, added] = files_.try_emplace(
          e.file.empty() ? std::string(kUnnamedFile) : std::string(e.file), files_.size() + 1);
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

  // The line program, the ranges and the unit that names them, into `dwarf`; nothing when no load
  // had lines.
  void fill(llvm::DWARFYAML::Data& dwarf) {
    if (ranges_.empty()) return;
    for (const std::string* name : file_names_) table_.Files.push_back({*name, 0, 0, 0});
    dwarf.DebugLines.push_back(table_);
    dwarf.DebugRanges.emplace();
    dwarf.DebugRanges->push_back({.Offset = llvm::yaml::Hex64(0),
                                  .AddrSize = llvm::yaml::Hex8(address_size_),
                                  .Entries = ranges_});
    llvm::DWARFYAML::Abbrev unit{.Code = llvm::yaml::Hex64(1),
                                 .Tag = llvm::dwarf::DW_TAG_compile_unit,
                                 .Children = llvm::dwarf::DW_CHILDREN_no,
                                 .Attributes = {}};
    for (const auto& [attribute, form] :
         {std::pair{llvm::dwarf::DW_AT_name, llvm::dwarf::DW_FORM_string},
          {llvm::dwarf::DW_AT_stmt_list, llvm::dwarf::DW_FORM_sec_offset},
          {llvm::dwarf::DW_AT_low_pc, llvm::dwarf::DW_FORM_addr},
          {llvm::dwarf::DW_AT_ranges, llvm::dwarf::DW_FORM_sec_offset}}) {
      unit.Attributes.push_back({attribute, form, llvm::yaml::Hex64(0)});
    }
    dwarf.DebugAbbrev.push_back({.ID = std::nullopt, .Table = {unit}});
    // The name, then the line program's, low_pc's and the ranges' offsets: all 0.
    llvm::DWARFYAML::Entry entry{.AbbrCode = llvm::yaml::Hex32(1), .Values = {}};
    entry.Values.push_back({llvm::yaml::Hex64(0), "JIT code", {}});
    for (int i = 0; i < 3; ++i) entry.Values.push_back({llvm::yaml::Hex64(0), "", {}});
    dwarf.CompileUnits.push_back({.Format = llvm::dwarf::DWARF32,
                                  .Length = std::nullopt,
                                  .Version = 4,
                                  .AddrSize = address_size_,
                                  .Type = llvm::dwarf::DW_UT_compile,
                                  .AbbrevTableID = std::nullopt,
                                  .AbbrOffset = std::nullopt,
                                  .Entries = {entry}});
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
  llvm::DWARFYAML::LineTable table_{};
  std::vector<llvm::DWARFYAML::RangeEntry> ranges_;  // each load's code with lines
  std::map<std::string, uint32_t> files_;
  std::vector<const std::string*> file_names_;  // by index, into files_
};

}  // namespace

absl::StatusOr<DumpImage> dump_image(const JitDump& dump) {
  DumpImage image;
  const uint32_t machine =
      dump.elf_machine != llvm::ELF::EM_NONE ? dump.elf_machine : uint32_t{llvm::ELF::EM_X86_64};
  const bool big_endian = dump.swapped == (std::endian::native == std::endian::little);
  const format::ArchFacts* arch = format::arch_of_elf(machine, big_endian);
  ElfWriter elf(machine, big_endian);
  // Every load's code at its own offset, aligned as a compiler aligns functions.
  std::vector<uint8_t> text;
  for (const CodeLoad& l : dump.loads) {
    text.resize((text.size() + kCodeAlign - 1) / kCodeAlign * kCodeAlign);
    image.offsets.push_back(kTextOffset + text.size());
    elf.add_function(l.name, ".text", image.offsets.back(), l.code.size());
    text.insert(text.end(), l.code.begin(), l.code.end());
  }
  const uint64_t eh_at = align8(kTextOffset + text.size());
  EhFrame eh(arch, big_endian, eh_at);
  for (size_t i = 0; i < dump.loads.size(); ++i) eh.add(dump.loads[i], image.offsets[i]);
  std::vector<uint8_t> eh_frame = eh.finish();
  const uint64_t hdr_at = align8(eh_at + eh_frame.size());
  // One segment loads the code and, after it, its unwinding tables.
  uint64_t loaded_end = kTextOffset + text.size();
  std::string loaded_last = ".text";
  elf.add_bytes(".text", kTextOffset, kCodeAlign, /*executable=*/true, std::move(text));
  if (!eh_frame.empty()) {
    std::vector<uint8_t> eh_frame_hdr = eh.header(hdr_at);
    loaded_end = hdr_at + eh_frame_hdr.size();
    loaded_last = ".eh_frame_hdr";
    elf.add_bytes(".eh_frame", eh_at, 8, /*executable=*/false, std::move(eh_frame));
    elf.add_bytes(".eh_frame_hdr", hdr_at, 4, /*executable=*/false, std::move(eh_frame_hdr));
  }
  elf.add_segment({.type = llvm::ELF::PT_LOAD,
                   .flags = llvm::ELF::PF_R | llvm::ELF::PF_X,
                   .vaddr = 0,
                   .offset = 0,
                   .file_size = loaded_end,
                   .mem_size = loaded_end,
                   .align = 0x1000,
                   .first = ".text",
                   .last = loaded_last});
  if (loaded_last != ".text") {
    elf.add_segment({.type = llvm::ELF::PT_GNU_EH_FRAME,
                     .flags = llvm::ELF::PF_R,
                     .vaddr = hdr_at,
                     .first = ".eh_frame_hdr",
                     .last = ".eh_frame_hdr"});
  }
  LineTable lines(arch != nullptr && arch->pointer_size == 4);
  for (size_t i = 0; i < dump.loads.size(); ++i) {
    if (dump.loads[i].lines) {
      lines.add(dump.loads[i], image.offsets[i], dump.debug_info[*dump.loads[i].lines]);
    }
  }
  lines.fill(elf.dwarf());
  auto written = elf.write();
  if (!written.ok()) return written.status();
  image.elf = *std::move(written);
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
  ElfWriter elf(elf_machine, big_endian);
  const uint64_t size = hi - image.base;
  elf.add_nobits_code(".text", kTextOffset, size);
  elf.add_segment({.type = llvm::ELF::PT_LOAD,
                   .flags = llvm::ELF::PF_R | llvm::ELF::PF_X,
                   .vaddr = kTextOffset,
                   .offset = kTextOffset,
                   .file_size = 0,
                   .mem_size = size,
                   .align = 0x1000,
                   .first = ".text",
                   .last = ".text"});
  for (const MapSymbol& s : symbols) {
    elf.add_function(s.name, ".text", image.offset_of(s.start), s.size);
  }
  auto written = elf.write();
  if (!written.ok()) return written.status();
  image.elf = *std::move(written);
  return image;
}

}  // namespace pdfix::jit
