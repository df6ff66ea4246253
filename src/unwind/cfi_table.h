// The call frame information of one ELF image (.eh_frame, else .debug_frame), read on demand: what
// is indexed up front is where each FDE is and what addresses it covers; an FDE's rows are
// evaluated (LLVM's DWARFDebugFrame and UnwindTable, over that FDE and its CIE alone) the first
// time a pc falls in it, and kept in the run's CfiCache. A recording that touches many binaries
// briefly pays for the code its samples were in, not for every function of every binary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFExpression.h"
#include "llvm/Support/MemoryBuffer.h"
#include "unwind/arch.h"

namespace pdfix::unwind {

// How a register (or the CFA) is recovered in the caller's frame. Eight bytes: an FDE's rows repeat
// the rules of every register for every row, and a run keeps thousands of FDEs' rows.
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
  // A register number CFI gave that no register set has (reg is a byte).
  static constexpr uint8_t kNoRegister = UINT8_MAX;
  // Expressions an FDE's rows may name (expr is 14 bits); an FDE with more is left unevaluated.
  static constexpr uint32_t kMaxExpressions = 1U << 14;
  int32_t offset = 0;  // DWARF's offsets and constants are 32 bits (LLVM's UnwindLocation)
  uint8_t reg = 0;
  Kind kind = kUnspecified;
  uint16_t expr : 14 = 0;
  bool deref : 1 = false;  // kRegPlus and kExpression: the value is stored at the computed address
  // kAtCfaPlus: an earlier row of the function had the slot at or above the stack pointer, so
  // once the stack pointer has passed it the register was restored from it (an epilogue's pop,
  // which GCC's x86-64 CFI does not mark). A slot never above the stack pointer (a save into the
  // red zone) is not one.
  bool saved_above_sp : 1 = false;
};
static_assert(sizeof(Rule) == 8);

struct RegRule {
  uint8_t reg = 0;
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

class CfiTable;

// The evaluated rows of every table of a run, within one bound on their bytes: past it, the half
// least recently used are dropped, whichever table they belong to. It outlives its tables.
class CfiCache {
 public:
  // A compile's hot code (cc1, as, ld and libc: some 6,000 FDEs in a system-wide recording of
  // gcc builds) fits several times over.
  static constexpr uint64_t kDefaultBytes = uint64_t{24} << 20;
  explicit CfiCache(uint64_t bound = kDefaultBytes) : bound_(bound) {}
  CfiCache(const CfiCache&) = delete;
  CfiCache& operator=(const CfiCache&) = delete;

  uint64_t bytes() const { return bytes_; }
  uint64_t evaluations() const { return evaluations_; }
  uint64_t evictions() const { return evictions_; }

 private:
  friend class CfiTable;
  // Makes room for `bytes` more, dropping the older half of what every table keeps as often as
  // needed.
  void reserve(uint64_t bytes);

  uint64_t bound_;
  uint64_t bytes_ = 0;
  uint64_t clock_ = 0;
  uint64_t evaluations_ = 0;
  uint64_t evictions_ = 0;
  std::vector<CfiTable*> tables_;
};

class CfiTable {
 public:
  // Reads `image` (kept alive by the table) and indexes its FDEs. A file without CFI gives an
  // empty table; a file that is no ELF of `regs.arch`'s machine, an error. Rows are kept in
  // `cache`, which must outlive the table; without one, in a cache of the table's own.
  static absl::StatusOr<std::unique_ptr<CfiTable>> build(std::unique_ptr<llvm::MemoryBuffer> image,
                                                         const RegisterSet& regs,
                                                         CfiCache* cache = nullptr);
  ~CfiTable();
  CfiTable(const CfiTable&) = delete;
  CfiTable& operator=(const CfiTable&) = delete;

  // The row that covers `vaddr`, or nullptr. It stays valid until the table (or another of its
  // cache) is asked about a pc of another FDE: the unwinder holds one row at a time.
  const CfiRow* find(uint64_t vaddr);
  // The link-time address of a byte at `file_offset`, through the PT_LOAD segments.
  std::optional<uint64_t> vaddr_of_offset(uint64_t file_offset) const;
  bool empty() const { return fdes_.empty(); }
  size_t fde_count() const { return fdes_.size(); }
  size_t cached_fdes() const { return cached_.size(); }

 private:
  friend class CfiCache;
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
  // One FDE's rows, evaluated; they view the copy of the CIE and FDE bytes kept here (for the
  // expressions) and the rules.
  struct Rows {
    std::string bytes;
    std::vector<CfiRow> rows;
    std::vector<RegRule> rules;
    std::vector<llvm::DWARFExpression> expressions;
    uint64_t used = 0;
    uint64_t size = 0;  // what it holds, for the cache's bound
  };

  CfiTable(const format::ArchFacts& arch, uint32_t registers, uint32_t sp)
      : arch_(&arch), registers_(registers), sp_(sp) {}
  llvm::DWARFDataExtractor extractor(llvm::StringRef bytes) const {
    return {bytes, !arch_->big_endian, arch_->pointer_size};
  }
  void index(llvm::StringRef section);
  std::unique_ptr<Rows> evaluate(const Fde& fde) const;
  // Drops the rows last used before `clock`; returns the bytes freed.
  uint64_t drop_older_than(uint64_t clock);

  const format::ArchFacts* arch_;  // the table's row: byte order, pointer size, LLVM's name
  uint32_t registers_;
  uint32_t sp_;
  bool eh_ = false;
  uint64_t section_address_ = 0;  // .eh_frame's: pc-relative pointers are relative to it
  llvm::StringRef section_;
  std::unique_ptr<llvm::MemoryBuffer> image_;
  llvm::SmallVector<char, 0> decompressed_;  // a compressed .debug_frame, which section_ views
  std::vector<Segment> segments_;
  std::vector<Fde> fdes_;         // sorted by begin
  std::vector<uint64_t> begins_;  // fdes_'s begins, searched apart: 8 bytes an FDE to touch
  std::vector<std::unique_ptr<Rows>> rows_;  // by FDE; null where not evaluated or dropped
  std::vector<uint32_t> cached_;             // the FDEs whose rows_ are kept
  size_t last_ = SIZE_MAX;                   // the FDE found last: a sample's pcs often share one
  // aarch64's PLT stubs, which no linker gives CFI there: a stub changes neither the stack
  // pointer, the frame pointer nor LR, so the row says just that (CFA = sp, the return address in
  // LR). The header before the stubs saves LR on the stack and is not covered. Empty elsewhere.
  static constexpr uint64_t kAarch64PltHeader = 32;
  CfiRow plt_row_;
  std::unique_ptr<CfiCache> own_cache_;
  CfiCache* cache_ = nullptr;
};

}  // namespace pdfix::unwind
