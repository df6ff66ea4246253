// The unwinder: from a sample's user registers and its copy of the user stack, the return
// addresses of the frames above, by the CFI rows of the code each pc is in. It reads nothing but
// the stack copy; it never guesses past what the rows (or, where a binary has none, a plausible
// frame-pointer chain) say.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "format/byte_order.h"
#include "unwind/arch.h"
#include "unwind/cfi_table.h"

namespace pdfix::unwind {

struct Registers {
  std::array<uint64_t, kMaxRegisters> value{};
  std::bitset<kMaxRegisters> known;
  void set(uint32_t reg, uint64_t v) {
    value[reg] = v;
    known.set(reg);
  }
};

// The bytes the kernel copied from the user stack, starting at the stack pointer.
struct StackCopy {
  uint64_t base = 0;
  std::span<const uint8_t> bytes;
  format::Endian endian;  // the recording's: the stack holds the recorded machine's words
};

// Where a pc's code is: the CFI row that covers it (found once: the unwinder asks nothing else).
struct Code {
  const CfiRow* row = nullptr;  // nullptr: no CFI is to be had for the pc
  std::string_view binary;      // for the summary
};

class CodeMap {
 public:
  virtual ~CodeMap() = default;
  // nullopt: no file is mapped at `pc` in the sampled process.
  virtual std::optional<Code> find(uint64_t pc) = 0;
  // The bits a code address of the sampled process may have set. A return address with others set
  // carries a signature (aarch64 pointer authentication signs the return addresses it saves, and
  // the one in LR between PACIASP and AUTIASP): the unwinder clears them before using it.
  virtual uint64_t code_address_mask() const { return ~uint64_t{0}; }
};

struct Unwound {
  // The sample's pc, then one address per caller: the return address less one (inside the call,
  // as perf's own unwinders report it), or the interrupted pc itself above a signal frame.
  std::vector<uint64_t> frames;
  enum class Stop {
    kOutermost,   // the CFI says there is no caller: a complete unwind
    kStackEnd,    // the rule reads past the stack copy
    kNoMap,       // a pc outside every mapped file
    kNoCfi,       // in a binary without CFI for it, and no plausible frame pointer
    kBadRule,     // a rule or expression that cannot be evaluated with what is known
    kNoProgress,  // the stack pointer did not move up
    kDepth,       // as deep as frames are kept
  };
  Stop stop = Stop::kOutermost;
  std::string_view stopped_in;  // kNoCfi: the binary
};

Unwound unwind(const RegisterSet& set, Registers regs, uint64_t pc, const StackCopy& stack,
               CodeMap& code, size_t max_frames);
// The same into `out`, whose frames' memory a caller reuses sample after sample.
void unwind(const RegisterSet& set, Registers regs, uint64_t pc, const StackCopy& stack,
            CodeMap& code, size_t max_frames, Unwound& out);

}  // namespace pdfix::unwind
