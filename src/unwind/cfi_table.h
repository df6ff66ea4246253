// The call frame information of one ELF image (.eh_frame, else .debug_frame), read on demand: what
// is indexed up front is where each FDE is and what addresses it covers; an FDE's rows are
// evaluated (LLVM's DWARFDebugFrame and UnwindTable, over that FDE and its CIE alone) the first
// time a pc falls in it, and kept in a bounded cache. A recording that touches many binaries
// briefly pays for the code its samples were in, not for every function of every binary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/DebugInfo/DWARF/DWARFExpression.h"
#include "llvm/Support/MemoryBuffer.h"
#include "unwind/arch.h"

namespace llvm::dwarf {
class UnwindLocation;
}  // namespace llvm::dwarf

namespace pdfix::unwind {

// How a register (or the CFA) is recovered in the caller's frame.
struct Rule {
  enum Kind : uint8_t {
    kUnspecified,  // no rule: callee-saved registers keep their value, others are unknown
    kUndefined,    // no value: for the return address, the outermost frame
    kSame,
    kAtCfaPlus,   // the value is stored at CFA + offset
    kIsCfaPlus,   // the value is CFA + offset
    kRegPlus,     // the value is register `reg` + offset (the usual CFA rule); at it with deref
    kExpression,  // evaluate the row's expressions[expr]; the value is at the result with deref
    kConstant,
  };
  Kind kind = kUnspecified;
  bool deref = false;  // kRegPlus and kExpression: the value is stored at the computed address
  // kAtCfaPlus: an earlier row of the function had the slot at or above the stack pointer, so
  // once the stack pointer has passed it the register was restored from it (an epilogue's pop,
  // which GCC's x86-64 CFI does not mark). A slot never above the stack pointer (a save into the
  // red zone) is not one.
  bool saved_above_sp = false;
  uint16_t reg = 0;
  uint32_t expr = 0;
  int64_t offset = 0;
};

struct RegRule {
  uint16_t reg = 0;
  Rule rule;
};

struct CfiRow {
  uint64_t begin = 0;  // addresses [begin, end) in the image's own (link-time) address space
  uint64_t end = 0;
  Rule cfa;
  std::span<const RegRule> rules;
  std::span<const llvm::DWARFExpression> expressions;
  bool signal_frame = false;  // the FDE's CIE has augmentation 'S': the caller was interrupted
};

class CfiTable {
 public:
  // FDEs whose rows are kept at once; past it, the half least recently used are dropped.
  static constexpr size_t kCachedFdes = 256;

  // Reads `image` (kept alive by the table) and indexes its FDEs. A file without CFI gives an
  // empty table; a file that is no ELF of `regs.arch`'s machine, an error.
  static absl::StatusOr<std::unique_ptr<CfiTable>> build(std::unique_ptr<llvm::MemoryBuffer> image,
                                                         const RegisterSet& regs);
  ~CfiTable();

  // The row that covers `vaddr`, or nullptr. It stays valid until the table is asked about a pc
  // of another FDE: the unwinder holds one row of a table at a time.
  const CfiRow* find(uint64_t vaddr);
  // The link-time address of a byte at `file_offset`, through the PT_LOAD segments.
  std::optional<uint64_t> vaddr_of_offset(uint64_t file_offset) const;
  bool empty() const { return fdes_.empty(); }
  size_t fde_count() const { return fdes_.size(); }
  size_t cached_fdes() const { return cache_.size(); }

 private:
  struct Segment {
    uint64_t offset;
    uint64_t size;
    uint64_t vaddr;
  };
  // An FDE as indexed: what it covers, and where it and its CIE lie in the section.
  struct Fde {
    uint64_t begin;
    uint64_t end;
    uint64_t at;
    uint64_t cie_at;
    uint32_t size;
    uint32_t cie_size;
  };
  // One FDE's rows, evaluated; they view the copy of the CIE and FDE bytes kept here.
  struct Rows {
    std::string bytes;
    std::vector<CfiRow> rows;
    std::vector<RegRule> rules;
    std::vector<llvm::DWARFExpression> expressions;
    uint64_t used = 0;
  };

  CfiTable(Arch arch, uint32_t registers, uint32_t sp)
      : arch_(arch), registers_(registers), sp_(sp) {}
  void index(llvm::StringRef section);
  std::unique_ptr<Rows> evaluate(const Fde& fde) const;
  void evict();

  Arch arch_;
  uint32_t registers_;
  uint32_t sp_;
  bool eh_ = false;
  uint64_t section_address_ = 0;  // .eh_frame's: pc-relative pointers are relative to it
  llvm::StringRef section_;
  std::unique_ptr<llvm::MemoryBuffer> image_;
  llvm::SmallVector<char, 0> decompressed_;  // a compressed .debug_frame, which section_ views
  std::vector<Segment> segments_;
  std::vector<Fde> fdes_;  // sorted by begin
  absl::flat_hash_map<size_t, std::unique_ptr<Rows>> cache_;
  uint64_t clock_ = 0;
};

}  // namespace pdfix::unwind
