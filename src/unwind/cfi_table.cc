#include "unwind/cfi_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/Object/Decompressor.h"
#include "llvm/Object/ELFObjectFile.h"

namespace pdfix::unwind {
namespace {

using llvm::dwarf::UnwindLocation;

llvm::Triple::ArchType triple_arch(Arch a) {
  return a == Arch::kX86_64 ? llvm::Triple::x86_64 : llvm::Triple::aarch64;
}

// zlib and zstd expand CFI by well under this; a larger claim is no real section.
constexpr uint64_t kMaxExpansion = 64;

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

absl::StatusOr<std::unique_ptr<CfiTable>> CfiTable::build(std::unique_ptr<llvm::MemoryBuffer> image,
                                                          const RegisterSet& regs) {
  auto table = std::unique_ptr<CfiTable>(new CfiTable());
  const std::string name = image->getBufferIdentifier().str();
  auto object = llvm::object::ObjectFile::createObjectFile(image->getMemBufferRef());
  if (!object) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", message(object.takeError())));
  }
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (elf == nullptr || elf->getArch() != triple_arch(regs.arch)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a 64-bit little-endian ELF of the recording's architecture"));
  }
  auto headers = elf->getELFFile().program_headers();
  if (!headers) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", message(headers.takeError())));
  }
  for (const auto& ph : *headers) {
    if (ph.p_type == llvm::ELF::PT_LOAD) {
      table->segments_.push_back({ph.p_offset, ph.p_filesz, ph.p_vaddr});
    }
  }
  // .eh_frame is what the program's own unwinder trusts; .debug_frame only stands in for it (a
  // separate debug file has .eh_frame as NOBITS, and its .debug_frame often compressed).
  std::optional<llvm::object::SectionRef> eh_frame, debug_frame;
  for (const llvm::object::SectionRef& section : elf->sections()) {
    auto section_name = section.getName();
    if (!section_name || section.getSize() == 0 ||
        llvm::object::ELFSectionRef(section).getType() == llvm::ELF::SHT_NOBITS) {
      continue;
    }
    if (*section_name == ".eh_frame") eh_frame = section;
    if (*section_name == ".debug_frame") debug_frame = section;
  }
  const std::optional<llvm::object::SectionRef> section = eh_frame ? eh_frame : debug_frame;
  if (section) {
    auto contents = section->getContents();
    if (!contents) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", message(contents.takeError())));
    }
    const bool is_eh = eh_frame.has_value();
    if (llvm::object::ELFSectionRef(*section).getFlags() & llvm::ELF::SHF_COMPRESSED) {
      auto decompressor = llvm::object::Decompressor::create(".debug_frame", *contents, true, true);
      if (!decompressor) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", message(decompressor.takeError())));
      }
      // The size is the header's word: no more than real data could expand to is allocated.
      if (decompressor->getDecompressedSize() > kMaxExpansion * contents->size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": its compressed .debug_frame claims ",
                         decompressor->getDecompressedSize(), " bytes from ", contents->size()));
      }
      if (llvm::Error e = decompressor->resizeAndDecompress(table->decompressed_)) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": ", message(std::move(e))));
      }
      *contents = llvm::StringRef(table->decompressed_.data(), table->decompressed_.size());
    }
    llvm::DWARFDebugFrame frames(triple_arch(regs.arch), is_eh, is_eh ? section->getAddress() : 0);
    if (llvm::Error e = frames.parse(llvm::DWARFDataExtractor(*contents, true, 8))) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": its ", is_eh ? ".eh_frame" : ".debug_frame", ": ", message(std::move(e))));
    }
    table->index(frames, regs);
  }
  table->image_ = std::move(image);
  return table;
}

Rule CfiTable::rule_of(const UnwindLocation& loc) {
  Rule r;
  switch (loc.getLocation()) {
    case UnwindLocation::Unspecified:
      break;
    case UnwindLocation::Undefined:
      r.kind = Rule::kUndefined;
      break;
    case UnwindLocation::Same:
      r.kind = Rule::kSame;
      break;
    case UnwindLocation::CFAPlusOffset:
      r.offset = loc.getOffset();
      r.kind = loc == UnwindLocation::createAtCFAPlusOffset(loc.getOffset()) ? Rule::kAtCfaPlus
                                                                             : Rule::kIsCfaPlus;
      break;
    case UnwindLocation::RegPlusOffset:
      r.kind = Rule::kRegPlus;
      r.reg = static_cast<uint16_t>(loc.getRegister());
      r.offset = loc.getOffset();
      r.deref =
          loc == UnwindLocation::createAtRegisterPlusOffset(loc.getRegister(), loc.getOffset());
      break;
    case UnwindLocation::DWARFExpr: {
      const auto expr = loc.getDWARFExpressionBytes();
      if (!expr) break;
      r.kind = Rule::kExpression;
      r.deref = loc == UnwindLocation::createAtDWARFExpression(*expr);
      r.expr = static_cast<uint32_t>(expressions_.size());
      expressions_.push_back(*expr);
      break;
    }
    case UnwindLocation::Constant:
      r.kind = Rule::kConstant;
      r.offset = loc.getConstant();
      break;
  }
  return r;
}

void CfiTable::index(const llvm::DWARFDebugFrame& frames, const RegisterSet& regs) {
  for (const llvm::dwarf::FrameEntry& entry : frames.entries()) {
    const auto* fde = llvm::dyn_cast<llvm::dwarf::FDE>(&entry);
    if (fde == nullptr || fde->getAddressRange() == 0) continue;
    auto rows = llvm::dwarf::UnwindTable::create(fde);
    // An FDE LLVM cannot evaluate leaves its range without rows: the unwinder then says so.
    if (!rows) {
      llvm::consumeError(rows.takeError());
      continue;
    }
    const uint64_t fde_end = fde->getInitialLocation() + fde->getAddressRange();
    const bool signal = fde->getLinkedCIE() != nullptr &&
                        fde->getLinkedCIE()->getAugmentationString().contains('S');
    for (auto it = rows->begin(); it != rows->end(); ++it) {
      if (!it->hasAddress()) continue;
      const auto next = std::next(it);
      const uint64_t end = next != rows->end() && next->hasAddress() ? next->getAddress() : fde_end;
      if (end <= it->getAddress()) continue;
      CfiRow row;
      row.begin = it->getAddress();
      row.end = end;
      row.signal_frame = signal;
      row.cfa = rule_of(it->getCFAValue());
      row.rules_at = static_cast<uint32_t>(rules_.size());
      for (uint32_t reg = 0; reg < regs.count; ++reg) {
        if (auto loc = it->getRegisterLocations().getRegisterLocation(reg)) {
          const Rule r = rule_of(*loc);
          if (r.kind != Rule::kUnspecified) rules_.push_back({static_cast<uint16_t>(reg), r});
        }
      }
      row.rules_count = static_cast<uint16_t>(rules_.size() - row.rules_at);
      rows_.push_back(row);
    }
  }
  std::sort(rows_.begin(), rows_.end(),
            [](const CfiRow& a, const CfiRow& b) { return a.begin < b.begin; });
}

const CfiRow* CfiTable::find(uint64_t vaddr) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), vaddr,
                             [](uint64_t v, const CfiRow& r) { return v < r.begin; });
  if (it == rows_.begin()) return nullptr;
  --it;
  return vaddr < it->end ? &*it : nullptr;
}

std::optional<uint64_t> CfiTable::vaddr_of_offset(uint64_t file_offset) const {
  for (const Segment& s : segments_) {
    if (file_offset >= s.offset && file_offset - s.offset < s.size) {
      return s.vaddr + (file_offset - s.offset);
    }
  }
  return std::nullopt;
}

}  // namespace pdfix::unwind
