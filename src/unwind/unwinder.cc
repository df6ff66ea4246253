#include "unwind/unwinder.h"

#include <optional>

#include "llvm/BinaryFormat/Dwarf.h"

namespace pdfix::unwind {
namespace {

std::optional<uint64_t> read_stack(const StackCopy& stack, uint64_t addr) {
  if (addr < stack.base || addr - stack.base > stack.bytes.size() ||
      stack.bytes.size() - (addr - stack.base) < 8) {
    return std::nullopt;
  }
  return stack.endian.u64(stack.bytes.data() + (addr - stack.base));
}

// Evaluates one frame's rules over the registers of the frame below and the stack copy.
class Frame {
 public:
  Frame(const StackCopy& stack, const CfiRow& row) : stack_(stack), row_(row) {}

  std::optional<uint64_t> read(uint64_t addr) const { return read_stack(stack_, addr); }

  // The value (deref false) or the address (deref true, read by the caller) a rule computes.
  std::optional<uint64_t> eval(const Rule& r, const Registers& regs, uint64_t cfa,
                               bool push_cfa) const {
    switch (r.kind) {
      case Rule::kRegPlus:
        if (r.reg >= kMaxRegisters || !regs.known[r.reg]) return std::nullopt;
        return regs.value[r.reg] + static_cast<uint64_t>(r.offset);
      case Rule::kExpression:
        if (r.expr >= row_.expressions.size()) return std::nullopt;
        return expression(row_.expressions[r.expr], regs, cfa, push_cfa);
      default:
        return std::nullopt;
    }
  }

  std::optional<uint64_t> expression(const llvm::DWARFExpression& expr, const Registers& regs,
                                     uint64_t cfa, bool push_cfa) const {
    namespace dw = llvm::dwarf;
    std::vector<uint64_t> st;
    if (push_cfa) st.push_back(cfa);
    auto pop = [&]() -> std::optional<uint64_t> {
      if (st.empty()) return std::nullopt;
      const uint64_t v = st.back();
      st.pop_back();
      return v;
    };
    for (const auto& op : expr) {
      if (op.isError() || st.size() > 64) return std::nullopt;
      const uint8_t code = op.getCode();
      if (code >= dw::DW_OP_lit0 && code <= dw::DW_OP_lit31) {
        st.push_back(code - dw::DW_OP_lit0);
        continue;
      }
      if ((code >= dw::DW_OP_breg0 && code <= dw::DW_OP_breg31) || code == dw::DW_OP_bregx) {
        const uint64_t reg = code == dw::DW_OP_bregx ? op.getRawOperand(0) : code - dw::DW_OP_breg0;
        const uint64_t offset = op.getRawOperand(code == dw::DW_OP_bregx ? 1 : 0);
        if (reg >= kMaxRegisters || !regs.known[reg]) return std::nullopt;
        st.push_back(regs.value[reg] + offset);
        continue;
      }
      switch (code) {
        case dw::DW_OP_const1u:
        case dw::DW_OP_const1s:
        case dw::DW_OP_const2u:
        case dw::DW_OP_const2s:
        case dw::DW_OP_const4u:
        case dw::DW_OP_const4s:
        case dw::DW_OP_const8u:
        case dw::DW_OP_const8s:
        case dw::DW_OP_constu:
        case dw::DW_OP_consts:
          st.push_back(op.getRawOperand(0));
          continue;
        case dw::DW_OP_dup:
          if (st.empty()) return std::nullopt;
          st.push_back(st.back());
          continue;
        case dw::DW_OP_drop:
          if (!pop()) return std::nullopt;
          continue;
        case dw::DW_OP_over:
          if (st.size() < 2) return std::nullopt;
          st.push_back(st[st.size() - 2]);
          continue;
        case dw::DW_OP_swap:
          if (st.size() < 2) return std::nullopt;
          std::swap(st[st.size() - 1], st[st.size() - 2]);
          continue;
        case dw::DW_OP_deref: {
          auto a = pop();
          auto v = a ? read(*a) : std::nullopt;
          if (!v) return std::nullopt;
          st.push_back(*v);
          continue;
        }
        case dw::DW_OP_plus_uconst: {
          auto a = pop();
          if (!a) return std::nullopt;
          st.push_back(*a + op.getRawOperand(0));
          continue;
        }
        default:
          break;
      }
      auto b = pop();
      auto a = pop();
      if (!a || !b) return std::nullopt;
      switch (code) {
        case dw::DW_OP_plus:
          st.push_back(*a + *b);
          break;
        case dw::DW_OP_minus:
          st.push_back(*a - *b);
          break;
        case dw::DW_OP_mul:
          st.push_back(*a * *b);
          break;
        case dw::DW_OP_and:
          st.push_back(*a & *b);
          break;
        case dw::DW_OP_or:
          st.push_back(*a | *b);
          break;
        case dw::DW_OP_xor:
          st.push_back(*a ^ *b);
          break;
        case dw::DW_OP_shl:
          st.push_back(*b < 64 ? *a << *b : 0);
          break;
        case dw::DW_OP_shr:
          st.push_back(*b < 64 ? *a >> *b : 0);
          break;
        case dw::DW_OP_eq:
          st.push_back(*a == *b);
          break;
        case dw::DW_OP_ne:
          st.push_back(*a != *b);
          break;
        case dw::DW_OP_ge:
          st.push_back(static_cast<int64_t>(*a) >= static_cast<int64_t>(*b));
          break;
        case dw::DW_OP_gt:
          st.push_back(static_cast<int64_t>(*a) > static_cast<int64_t>(*b));
          break;
        case dw::DW_OP_le:
          st.push_back(static_cast<int64_t>(*a) <= static_cast<int64_t>(*b));
          break;
        case dw::DW_OP_lt:
          st.push_back(static_cast<int64_t>(*a) < static_cast<int64_t>(*b));
          break;
        default:
          return std::nullopt;
      }
    }
    return pop();
  }

  const StackCopy& stack_;
  const CfiRow& row_;
};

}  // namespace

Unwound unwind(const RegisterSet& set, Registers regs, uint64_t pc, const StackCopy& stack,
               CodeMap& code, size_t max_frames) {
  Unwound out;
  unwind(set, regs, pc, stack, code, max_frames, out);
  return out;
}

void unwind(const RegisterSet& set, Registers regs, uint64_t pc, const StackCopy& stack,
            CodeMap& code, size_t max_frames, Unwound& out) {
  out.frames.clear();
  out.stopped_in = {};
  out.frames.push_back(pc);
  bool exact = true;  // the pc is where execution was, not a return address
  const uint64_t mask = code.code_address_mask();
  while (out.frames.size() < max_frames) {
    if (!regs.known[set.sp]) {
      out.stop = Unwound::Stop::kBadRule;
      return;
    }
    const uint64_t sp = regs.value[set.sp];
    const uint64_t lookup = exact ? pc : pc - 1;
    const std::optional<Code> where = code.find(lookup);
    if (!where) {
      out.stop = Unwound::Stop::kNoMap;
      return;
    }
    const CfiRow* row = where->row;
    Registers next = regs;
    uint64_t next_pc = 0;
    bool signal = false;
    if (row == nullptr) {
      // No CFI here: one frame-pointer step, taken only when the chain is plausible (the saved
      // frame lies in the stack copy above the stack pointer, and returns into mapped code).
      const uint64_t fp = regs.value[set.fp];
      const auto saved_fp = regs.known[set.fp] && fp >= sp ? read_stack(stack, fp) : std::nullopt;
      auto ra = saved_fp ? read_stack(stack, fp + 8) : std::nullopt;
      if (ra) *ra &= mask;
      if (!ra || *ra == 0 || !code.find(*ra - 1)) {
        out.stop = Unwound::Stop::kNoCfi;
        out.stopped_in = where->binary;
        return;
      }
      next.set(set.fp, *saved_fp);
      next.set(set.sp, fp + 16);
      next_pc = *ra;
    } else {
      Frame f(stack, *row);
      std::optional<uint64_t> cfa;
      if (row->cfa.kind == Rule::kRegPlus || row->cfa.kind == Rule::kExpression) {
        cfa = f.eval(row->cfa, regs, 0, false);
        if (cfa && row->cfa.deref) cfa = f.read(*cfa);
      }
      if (!cfa) {
        out.stop = Unwound::Stop::kBadRule;
        return;
      }
      bool ra_rule = false;
      for (const RegRule& rr : row->rules) {
        const Rule& r = rr.rule;
        std::optional<uint64_t> v;
        switch (r.kind) {
          case Rule::kUndefined:
            if (rr.reg == set.ra) {
              out.stop = Unwound::Stop::kOutermost;
              return;
            }
            next.known.reset(rr.reg);
            continue;
          case Rule::kSame:
          case Rule::kUnspecified:
            v = regs.known[rr.reg] ? std::optional(regs.value[rr.reg]) : std::nullopt;
            break;
          case Rule::kAtCfaPlus: {
            // A slot below the stack pointer is outside the copy. Where the function had saved
            // the register above it, the stack pointer passed the slot by popping it: the register
            // holds the caller's value. Otherwise (a save into the red zone) it is unknown, which
            // matters only if it is read.
            const uint64_t slot = *cfa + static_cast<uint64_t>(r.offset);
            if (slot < sp && r.saved_above_sp) {
              v = regs.known[rr.reg] ? std::optional(regs.value[rr.reg]) : std::nullopt;
            } else {
              v = f.read(slot);
            }
            break;
          }
          case Rule::kIsCfaPlus:
            v = *cfa + static_cast<uint64_t>(r.offset);
            break;
          case Rule::kConstant:
            v = static_cast<uint64_t>(r.offset);
            break;
          case Rule::kRegPlus:
          case Rule::kExpression:
            v = f.eval(r, regs, *cfa, true);
            if (v && r.deref) v = f.read(*v);
            break;
        }
        if (rr.reg == set.ra) ra_rule = true;
        if (v) {
          next.set(rr.reg, *v);
        } else {
          next.known.reset(rr.reg);
        }
      }
      // Without a rule the return address is where it was (an aarch64 leaf keeps it in LR).
      if (!ra_rule && !regs.known[set.ra]) {
        out.stop = Unwound::Stop::kBadRule;
        return;
      }
      if (!next.known[set.ra]) {
        out.stop = Unwound::Stop::kStackEnd;
        return;
      }
      next_pc = next.value[set.ra] & mask;
      next.set(set.sp, *cfa);
      signal = row->signal_frame;
    }
    if (next_pc == 0) {
      out.stop = Unwound::Stop::kOutermost;
      return;
    }
    const uint64_t next_sp = next.value[set.sp];
    if (next_sp < sp || (next_sp == sp && next_pc == pc)) {
      out.stop = Unwound::Stop::kNoProgress;
      return;
    }
    exact = signal;
    out.frames.push_back(exact ? next_pc : next_pc - 1);
    pc = next_pc;
    regs = next;
  }
  out.stop = Unwound::Stop::kDepth;
}

}  // namespace pdfix::unwind
