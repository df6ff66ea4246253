// The call frame information of one ELF image (.eh_frame and .debug_frame, read by LLVM's
// DWARFDebugFrame and evaluated into rows by its UnwindTable), indexed once: every row of every FDE
// sorted by address, so that a pc is looked up by binary search however many samples ask.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/DebugInfo/DWARF/DWARFExpression.h"
#include "llvm/Support/MemoryBuffer.h"
#include "unwind/arch.h"

namespace llvm {
class DWARFDebugFrame;
namespace dwarf {
class UnwindLocation;
}
}  // namespace llvm

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
    kExpression,  // evaluate expressions()[expr]; the value is at the result with deref
    kConstant,
  };
  Kind kind = kUnspecified;
  bool deref = false;  // kRegPlus and kExpression: the value is stored at the computed address
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
  uint32_t rules_at = 0;  // rules()[rules_at, rules_at + rules_count)
  uint16_t rules_count = 0;
  bool signal_frame = false;  // the FDE's CIE has augmentation 'S': the caller was interrupted
};

class CfiTable {
 public:
  // Reads `image` (kept alive by the table: expressions view its bytes). A file without CFI gives
  // an empty table; a file that is no ELF of `regs.arch`'s machine, an error.
  static absl::StatusOr<std::unique_ptr<CfiTable>> build(std::unique_ptr<llvm::MemoryBuffer> image,
                                                         const RegisterSet& regs);

  // The row that covers `vaddr`, or nullptr.
  const CfiRow* find(uint64_t vaddr) const;
  std::span<const RegRule> rules(const CfiRow& row) const {
    return std::span(rules_).subspan(row.rules_at, row.rules_count);
  }
  const llvm::DWARFExpression& expression(uint32_t i) const { return expressions_[i]; }
  // The link-time address of a byte at `file_offset`, through the PT_LOAD segments.
  std::optional<uint64_t> vaddr_of_offset(uint64_t file_offset) const;
  bool empty() const { return rows_.empty(); }
  size_t row_count() const { return rows_.size(); }

 private:
  struct Segment {
    uint64_t offset;
    uint64_t size;
    uint64_t vaddr;
  };
  void index(const llvm::DWARFDebugFrame& frames, const RegisterSet& regs);
  Rule rule_of(const llvm::dwarf::UnwindLocation& loc);

  std::unique_ptr<llvm::MemoryBuffer> image_;
  llvm::SmallVector<char, 0> decompressed_;  // a compressed .debug_frame, which rows view
  std::vector<Segment> segments_;
  std::vector<CfiRow> rows_;
  std::vector<RegRule> rules_;
  std::vector<llvm::DWARFExpression> expressions_;
};

}  // namespace pdfix::unwind
