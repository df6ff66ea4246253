#include "unwind/cfi_table.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/Object/Decompressor.h"
#include "llvm/Object/ELFObjectFile.h"

namespace pdfix::unwind {
namespace {

using llvm::dwarf::UnwindLocation;

// zlib and zstd expand CFI by well under this; a larger claim is no real section.
constexpr uint64_t kMaxExpansion = 64;

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

uint8_t register_byte(uint32_t reg) {
  return reg < Rule::kNoRegister ? static_cast<uint8_t>(reg) : Rule::kNoRegister;
}

Rule rule_of(const UnwindLocation& loc, std::vector<llvm::DWARFExpression>& expressions) {
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
      r.reg = register_byte(loc.getRegister());
      r.offset = loc.getOffset();
      r.deref =
          loc == UnwindLocation::createAtRegisterPlusOffset(loc.getRegister(), loc.getOffset());
      break;
    case UnwindLocation::DWARFExpr: {
      const auto expr = loc.getDWARFExpressionBytes();
      if (!expr) break;
      r.kind = Rule::kExpression;
      r.deref = loc == UnwindLocation::createAtDWARFExpression(*expr);
      r.expr = static_cast<uint16_t>(expressions.size() % Rule::kMaxExpressions);
      expressions.push_back(*expr);
      break;
    }
    case UnwindLocation::Constant:
      r.kind = Rule::kConstant;
      r.offset = loc.getConstant();
      break;
  }
  return r;
}

// Where an entry's CIE id (or CIE pointer) field lies, from the entry's start.
uint64_t id_field(bool dwarf64) { return dwarf64 ? 12 : 4; }

}  // namespace

CfiTable::~CfiTable() {
  cache_->bytes_ -= drop_older_than(UINT64_MAX);
  std::erase(cache_->tables_, this);
}

absl::StatusOr<std::unique_ptr<CfiTable>> CfiTable::build(std::unique_ptr<llvm::MemoryBuffer> image,
                                                          const RegisterSet& regs,
                                                          CfiCache* cache) {
  auto table = std::unique_ptr<CfiTable>(new CfiTable(*regs.facts, regs.count, regs.sp));
  if (cache == nullptr) {
    table->own_cache_ = std::make_unique<CfiCache>();
    cache = table->own_cache_.get();
  }
  table->cache_ = cache;
  cache->tables_.push_back(table.get());
  const std::string name = image->getBufferIdentifier().str();
  auto object = llvm::object::ObjectFile::createObjectFile(image->getMemBufferRef());
  if (!object) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", message(object.takeError())));
  }
  // The unwound architectures' binaries are 64-bit little-endian ELF files, which this reads.
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(object->get());
  if (elf == nullptr || elf->getArch() != regs.facts->triple || regs.facts->pointer_size != 8 ||
      regs.facts->big_endian) {
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
    // A slim copy keeps the section's place, not its code: that is all a stub row needs.
    if (section_name && *section_name == ".plt" && regs.arch == Arch::kAarch64 &&
        section.getSize() > kAarch64PltHeader) {
      table->plt_row_.begin = section.getAddress() + kAarch64PltHeader;
      table->plt_row_.end = section.getAddress() + section.getSize();
      table->plt_row_.cfa =
          Rule{.offset = 0, .reg = static_cast<uint8_t>(regs.sp), .kind = Rule::kRegPlus};
    }
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
    table->eh_ = eh_frame.has_value();
    table->section_address_ = table->eh_ ? section->getAddress() : 0;
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
    table->section_ = *contents;
    table->index(*contents);
  }
  table->image_ = std::move(image);
  return table;
}

// A walk over the entries by their lengths: each CIE is parsed (by LLVM, alone) for the encoding
// of its FDEs' addresses, each FDE read only as far as the range it covers.
void CfiTable::index(llvm::StringRef section) {
  const llvm::DWARFDataExtractor data = extractor(section);
  struct Cie {
    std::optional<uint8_t> encoding;  // of its FDEs' addresses; nullopt: LLVM could not read it
    uint64_t end = 0;
  };
  absl::flat_hash_map<uint64_t, Cie> cies;
  uint64_t offset = 0;
  while (data.isValidOffsetForDataOfSize(offset, 4)) {
    const uint64_t start = offset;
    llvm::Error err = llvm::Error::success();
    const auto [length, format] = data.getInitialLength(&offset, &err);
    if (err) {
      llvm::consumeError(std::move(err));
      break;
    }
    const uint64_t end = offset + length;
    if (length == 0) {
      if (eh_) break;  // .eh_frame's terminator
      continue;
    }
    if (end < offset || end > section.size()) break;
    const bool dwarf64 = format == llvm::dwarf::DWARF64;
    const uint32_t id_size = dwarf64 && !eh_ ? 8 : 4;
    const uint64_t id_at = offset;
    const uint64_t id = data.getUnsigned(&offset, id_size);
    const uint64_t cie_id = eh_ ? 0 : (dwarf64 ? llvm::dwarf::DW64_CIE_ID : llvm::dwarf::DW_CIE_ID);
    if (id == cie_id) {
      llvm::DWARFDebugFrame frame(arch_->triple, eh_, section_address_ + start);
      std::optional<uint8_t> encoding;
      if (llvm::Error e = frame.parse(extractor(section.slice(start, end)))) {
        llvm::consumeError(std::move(e));
      } else if (frame.entries().begin() != frame.entries().end()) {
        if (const auto* cie = llvm::dyn_cast<llvm::dwarf::CIE>(&*frame.entries().begin())) {
          encoding = static_cast<uint8_t>(cie->getFDEPointerEncoding());
        }
      }
      cies[start] = {encoding, end};
      offset = end;
      continue;
    }
    const uint64_t cie_at = eh_ ? id_at - id : id;
    auto cie = cies.find(cie_at);
    if (cie == cies.end() || !cie->second.encoding) {
      offset = end;
      continue;
    }
    std::optional<uint64_t> begin, range;
    if (eh_) {
      begin = data.getEncodedPointer(&offset, *cie->second.encoding, section_address_ + offset);
      range = data.getEncodedPointer(&offset, *cie->second.encoding, 0);
    } else {
      begin = data.getUnsigned(&offset, 8);
      range = data.getUnsigned(&offset, 8);
    }
    const uint64_t cie_end = cie->second.end;
    if (begin && range && *range != 0 && offset <= end && cie_end - cie_at <= UINT32_MAX &&
        end - start <= UINT32_MAX) {
      fdes_.push_back({*begin, *begin + *range, start, cie_at, static_cast<uint32_t>(end - start),
                       static_cast<uint32_t>(cie_end - cie_at)});
    }
    offset = end;
  }
  std::sort(fdes_.begin(), fdes_.end(), [](const Fde& a, const Fde& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.at < b.at;
  });
  begins_.reserve(fdes_.size());
  for (const Fde& f : fdes_) begins_.push_back(f.begin);
  rows_.resize(fdes_.size());
}

// The FDE and its CIE copied side by side, the FDE's CIE pointer made to point back at the copy
// and the section's address shifted so that the FDE's pc-relative addresses come out as they
// were: LLVM's parser then reads one FDE, not the section.
std::unique_ptr<CfiTable::Rows> CfiTable::evaluate(const Fde& fde) const {
  auto rows = std::make_unique<Rows>();
  rows->bytes.assign(section_.data() + fde.cie_at, fde.cie_size);
  rows->bytes.append(section_.data() + fde.at, fde.size);
  char* copy = rows->bytes.data() + fde.cie_size;
  const llvm::endianness order =
      arch_->big_endian ? llvm::endianness::big : llvm::endianness::little;
  const bool dwarf64 = llvm::support::endian::read32(copy, order) == UINT32_MAX;
  const uint64_t id_at = fde.cie_size + id_field(dwarf64);
  if (eh_) {
    llvm::support::endian::write32(copy + id_field(dwarf64), static_cast<uint32_t>(id_at), order);
  } else if (dwarf64) {
    llvm::support::endian::write64(copy + id_field(dwarf64), 0, order);
  } else {
    llvm::support::endian::write32(copy + id_field(dwarf64), 0, order);
  }
  rows->size = sizeof(Rows) + rows->bytes.capacity();
  llvm::DWARFDebugFrame frames(arch_->triple, eh_,
                               eh_ ? section_address_ + fde.at - fde.cie_size : 0);
  if (llvm::Error e = frames.parse(extractor(rows->bytes))) {
    llvm::consumeError(std::move(e));
    return rows;
  }
  const llvm::dwarf::FDE* parsed = nullptr;
  for (const llvm::dwarf::FrameEntry& entry : frames.entries()) {
    if (const auto* f = llvm::dyn_cast<llvm::dwarf::FDE>(&entry)) parsed = f;
  }
  if (parsed == nullptr) return rows;
  auto table = llvm::dwarf::UnwindTable::create(parsed);
  // An FDE LLVM cannot evaluate leaves its range without rows: the unwinder then says so.
  if (!table) {
    llvm::consumeError(table.takeError());
    return rows;
  }
  const bool signal = parsed->getLinkedCIE() != nullptr &&
                      parsed->getLinkedCIE()->getAugmentationString().contains('S');
  std::vector<std::pair<uint32_t, uint16_t>> rule_ranges;
  // By register: the save slots (their offsets from the CFA) some row so far had at or above the
  // stack pointer.
  std::array<llvm::SmallVector<int64_t, 2>, kMaxRegisters> above_sp;
  for (auto it = table->begin(); it != table->end(); ++it) {
    if (!it->hasAddress()) continue;
    const auto next = std::next(it);
    const uint64_t end = next != table->end() && next->hasAddress() ? next->getAddress() : fde.end;
    if (end <= it->getAddress()) continue;
    CfiRow row;
    row.begin = it->getAddress();
    row.end = end;
    row.signal_frame = signal;
    row.cfa = rule_of(it->getCFAValue(), rows->expressions);
    const auto at = static_cast<uint32_t>(rows->rules.size());
    for (uint32_t reg = 0; reg < registers_; ++reg) {
      if (auto loc = it->getRegisterLocations().getRegisterLocation(reg)) {
        Rule r = rule_of(*loc, rows->expressions);
        if (r.kind == Rule::kAtCfaPlus) {
          llvm::SmallVector<int64_t, 2>& seen = above_sp[reg];
          if (row.cfa.kind == Rule::kRegPlus && !row.cfa.deref && row.cfa.reg == sp_ &&
              row.cfa.offset + r.offset >= 0 && !llvm::is_contained(seen, r.offset)) {
            seen.push_back(r.offset);
          }
          r.saved_above_sp = llvm::is_contained(seen, r.offset);
        }
        if (r.kind != Rule::kUnspecified) rows->rules.push_back({static_cast<uint8_t>(reg), r});
      }
    }
    rule_ranges.emplace_back(at, static_cast<uint16_t>(rows->rules.size() - at));
    rows->rows.push_back(row);
  }
  if (rows->expressions.size() > Rule::kMaxExpressions) {
    rows->rows.clear();
    return rows;
  }
  // Kept for long and many at a time: no slack. The vectors are whole now: the rows may view them.
  rows->rows.shrink_to_fit();
  rows->rules.shrink_to_fit();
  rows->expressions.shrink_to_fit();
  for (size_t i = 0; i < rows->rows.size(); ++i) {
    rows->rows[i].rules =
        std::span(rows->rules).subspan(rule_ranges[i].first, rule_ranges[i].second);
    rows->rows[i].expressions = rows->expressions;
  }
  rows->size += rows->rows.capacity() * sizeof(CfiRow) + rows->rules.capacity() * sizeof(RegRule) +
                rows->expressions.capacity() * sizeof(llvm::DWARFExpression);
  return rows;
}

void CfiCache::reserve(uint64_t bytes) {
  while (bytes_ + bytes > bound_ && bytes_ > 0) {
    std::vector<uint64_t> used;
    for (const CfiTable* t : tables_) {
      for (const uint32_t i : t->cached_) used.push_back(t->rows_[i]->used);
    }
    if (used.empty()) {
      bytes_ = 0;
      break;
    }
    auto middle = used.begin() + static_cast<std::ptrdiff_t>(used.size() / 2);
    std::nth_element(used.begin(), middle, used.end());
    // At least the least recently used goes, so that the loop ends.
    const uint64_t keep_from = std::max(*middle, *std::min_element(used.begin(), middle + 1) + 1);
    for (CfiTable* t : tables_) bytes_ -= t->drop_older_than(keep_from);
    ++evictions_;
  }
  bytes_ += bytes;
}

uint64_t CfiTable::drop_older_than(uint64_t clock) {
  uint64_t freed = 0;
  std::erase_if(cached_, [&](uint32_t i) {
    if (rows_[i]->used >= clock) return false;
    freed += rows_[i]->size;
    rows_[i].reset();
    return true;
  });
  if (last_ != SIZE_MAX && rows_[last_] == nullptr) last_ = SIZE_MAX;
  return freed;
}

const CfiRow* CfiTable::find(uint64_t vaddr) {
  // The FDE found last, when the search would find it too (the last that begins at or below).
  size_t index = last_;
  if (index == SIZE_MAX || vaddr < begins_[index] || vaddr >= fdes_[index].end ||
      (index + 1 < begins_.size() && begins_[index + 1] <= vaddr)) {
    auto it = std::upper_bound(begins_.begin(), begins_.end(), vaddr);
    const bool in_fde = it != begins_.begin() && vaddr < fdes_[it - begins_.begin() - 1].end;
    if (!in_fde) {
      return vaddr >= plt_row_.begin && vaddr < plt_row_.end ? &plt_row_ : nullptr;
    }
    index = static_cast<size_t>(it - begins_.begin()) - 1;
  }
  if (rows_[index] == nullptr) {
    std::unique_ptr<Rows> rows = evaluate(fdes_[index]);
    cache_->reserve(rows->size);
    ++cache_->evaluations_;
    rows_[index] = std::move(rows);
    cached_.push_back(static_cast<uint32_t>(index));
  }
  last_ = index;
  Rows& rows = *rows_[index];
  rows.used = ++cache_->clock_;
  auto row = std::upper_bound(rows.rows.begin(), rows.rows.end(), vaddr,
                              [](uint64_t v, const CfiRow& r) { return v < r.begin; });
  if (row == rows.rows.begin()) return nullptr;
  --row;
  return vaddr < row->end ? &*row : nullptr;
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
