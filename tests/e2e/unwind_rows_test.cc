// The unwinder over CFI rows read from binaries built here, and stacks laid out by hand: what each
// row says about the caller's registers, where a real recording reaches such a pc only now and
// then.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/harness.h"
#include "llvm/Support/MemoryBuffer.h"
#include "unwind/cfi_table.h"
#include "unwind/unwinder.h"

namespace pdfix::e2e {
namespace {

namespace fs = std::filesystem;

// The stacks these tests build are x86-64's: little-endian words.
const format::Endian kLittle = format::Endian::of(std::endian::little);

// The object a test built, at its link-time addresses (below 1 MiB), and code without CFI at
// 0x900000 for its functions' callers.
class BuiltCode : public unwind::CodeMap {
 public:
  explicit BuiltCode(unwind::CfiTable& cfi, uint64_t mask = ~uint64_t{0})
      : cfi_(cfi), mask_(mask) {}
  std::optional<unwind::Code> find(uint64_t pc) override {
    if (pc < 0x100000) return unwind::Code{cfi_.find(pc), "built"};
    if (pc >= 0x900000 && pc < 0x901000) return unwind::Code{nullptr, "caller"};
    return std::nullopt;
  }
  uint64_t code_address_mask() const override { return mask_; }

 private:
  unwind::CfiTable& cfi_;
  uint64_t mask_;
};

// The CFI of the object at `path`, read for `set`'s registers; nullptr (a failure) when it cannot
// be read.
std::unique_ptr<unwind::CfiTable> cfi_of(const std::string& path, const unwind::RegisterSet& set) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << path << ": " << buffer.getError().message();
    return nullptr;
  }
  auto cfi = unwind::CfiTable::build(std::move(*buffer), set);
  if (!cfi.ok()) {
    ADD_FAILURE() << cfi.status();
    return nullptr;
  }
  return *std::move(cfi);
}

// f, calling g twice, built for aarch64 into DIR/a.so with `flags`: the shell's result, whose
// output starts with f's address and goes on with what `then` prints.
RunResult build_aarch64_f(const std::string& dir, const std::string& flags,
                          const std::string& then = "") {
  std::ofstream(dir + "/a.c")
      << "int g(int);\nint f(int x) { int r = g(x) * 3; return r + g(r); }\n";
  return sh("cd " + dir + " && clang-19 --target=aarch64-linux-gnu -O2 -fomit-frame-pointer " +
            flags +
            " -fasynchronous-unwind-tables -nostdlib -shared --ld-path=/usr/bin/ld.lld-19"
            " -Wl,--build-id -o a.so a.c && llvm-nm-19 a.so | sed -n 's/ T f$//p'" +
            then);
}

// An aarch64 shared object built here, its CFI read by CfiTable, and a stack laid out as its
// function f leaves it: f saves x30 and x19 in its prologue, so the caller's pc and x19 come from
// the stack; before the prologue, from the registers.
TEST(UnwindAarch64, PrologueAndLeafRows) {
  const std::string dir = temp_dir();
  RunResult r = build_aarch64_f(dir, "");
  ASSERT_EQ(r.status, 0) << r.err;
  const uint64_t f = std::stoull(r.out, nullptr, 16);
  auto set = unwind::register_set("aarch64");
  ASSERT_TRUE(set);
  auto cfi = cfi_of(dir + "/a.so", *set);
  ASSERT_NE(cfi, nullptr);
  ASSERT_NE(cfi->find(f), nullptr);
  EXPECT_EQ(cfi->find(f)->cfa.reg, 31U);  // sp

  BuiltCode code(*cfi);
  const uint64_t sp = 0x7ffff000, ret = 0x900010, x19 = 0x1919;
  std::vector<uint8_t> stack(64, 0);
  std::memcpy(stack.data(), &ret, 8);      // x30 at CFA - 16 = sp
  std::memcpy(stack.data() + 8, &x19, 8);  // x19 at CFA - 8
  unwind::Registers regs;
  regs.set(31, sp);
  regs.set(30, 0x900100);  // LR: stale once f has saved it
  regs.set(19, 0x5555);
  // After the prologue (stp x30, x19, [sp, #-16]!): CFA = sp + 16.
  auto u = unwind::unwind(*set, regs, f + 8, {sp, stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 2U);
  EXPECT_EQ(u.frames[1], ret - 1);
  EXPECT_EQ(u.stop, unwind::Unwound::Stop::kNoCfi);
  EXPECT_EQ(u.stopped_in, "caller");
  // At f's first instruction nothing is saved yet: the return address is LR.
  u = unwind::unwind(*set, regs, f, {sp, stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 2U);
  EXPECT_EQ(u.frames[1], 0x900100U - 1);
  fs::remove_all(dir);
}

// f built with -mbranch-protection=standard: PACIASP signs LR before the prologue
// saves it, and the CFI says so (DW_CFA_AARCH64_negate_ra_state). The signature sits in the bits
// above the user address space; the mask the recording justifies (its highest user address, here
// the stack's) clears it, from the stack's copy and from LR alike. Without the mask the signed
// address is in no map and the chain ends there.
TEST(UnwindAarch64, SignedReturnAddressesAreStripped) {
  const std::string dir = temp_dir();
  RunResult r =
      build_aarch64_f(dir, "-mbranch-protection=standard",
                      " && llvm-objdump-19 -d --no-show-raw-insn --disassemble-symbols=f a.so");
  ASSERT_EQ(r.status, 0) << r.err;
  const uint64_t f = std::stoull(r.out, nullptr, 16);
  // f's first instruction signs LR (paciasp, or hint #25 as older disassemblers print it).
  ASSERT_TRUE(r.out.find("paciasp") != std::string::npos ||
              r.out.find("hint\t#0x19") != std::string::npos)
      << r.out;
  auto set = unwind::register_set("aarch64");
  ASSERT_TRUE(set);
  auto cfi = cfi_of(dir + "/a.so", *set);
  ASSERT_NE(cfi, nullptr);
  const uint64_t sp = 0x7ffff000, ret = 0x900010, signature = uint64_t{0x2a} << 48;
  const uint64_t mask = unwind::code_address_mask(*set, sp);
  EXPECT_EQ(mask, 0x7fffffffU);
  const uint64_t signed_ret = ret | signature, x19 = 0x1919;
  std::vector<uint8_t> stack(64, 0);
  std::memcpy(stack.data(), &signed_ret, 8);
  std::memcpy(stack.data() + 8, &x19, 8);
  unwind::Registers regs;
  regs.set(31, sp);
  regs.set(30, 0x900100 | signature);
  BuiltCode code(*cfi, mask);
  // After paciasp and the prologue's store (two instructions in): the saved, signed LR.
  auto u = unwind::unwind(*set, regs, f + 8, {sp, stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 2U);
  EXPECT_EQ(u.frames[1], ret - 1);
  // After paciasp, before the store: LR itself is signed.
  u = unwind::unwind(*set, regs, f + 4, {sp, stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 2U);
  EXPECT_EQ(u.frames[1], 0x900100U - 1);
  BuiltCode unmasked(*cfi);
  u = unwind::unwind(*set, regs, f + 8, {sp, stack, kLittle}, unmasked, 16);
  EXPECT_EQ(u.stop, unwind::Unwound::Stop::kNoMap);
  fs::remove_all(dir);
}

// The mask is the user address space the recording shows, and only aarch64 has one.
TEST(UnwindAarch64, CodeAddressMaskIsTheShownAddressSpace) {
  auto arm = unwind::register_set("aarch64");
  auto x86 = unwind::register_set("x86_64");
  ASSERT_TRUE(arm && x86);
  EXPECT_EQ(unwind::code_address_mask(*arm, 0xffffc2a8f000), 0xffffffffffffU);  // 48-bit VA
  EXPECT_EQ(unwind::code_address_mask(*arm, 0x7fb7e00000), 0x7fffffffffU);      // 39-bit VA
  EXPECT_EQ(unwind::code_address_mask(*arm, 0), ~uint64_t{0});  // nothing shown: nothing cleared
  EXPECT_EQ(unwind::code_address_mask(*x86, 0x7ffff000), ~uint64_t{0});
}

// An x86-64 shared object whose CFI is what GCC writes for an epilogue: the pop moves the CFA
// but leaves the register's row naming a slot that is now below the stack pointer (the push put
// it right at the stack pointer). At `leaf`'s ret the caller's rbp is the register itself (popped
// from its slot), and `outer`'s CFA, rbp + 16, can be found; at `zone`'s ret, rbp was stored into
// the red zone and never above the stack pointer: its slot is not in the copy and nothing says the
// register still holds it.
constexpr const char* kEpilogues = R"(  .text
  .globl leaf, leaf_ret, zone, zone_ret, outer, outer_after, outer_zone_after
leaf:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  xor %ebp, %ebp
  pop %rbp
  .cfi_def_cfa_offset 8
leaf_ret:
  ret
  .cfi_endproc
zone:
  .cfi_startproc
  mov %rbp, -8(%rsp)
  .cfi_offset %rbp, -16
  xor %ebp, %ebp
zone_ret:
  ret
  .cfi_endproc
outer:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  call leaf
outer_after:
  call zone
outer_zone_after:
  pop %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
)";

TEST(UnwindX86, AnEpiloguesPoppedRegistersAreTheCallers) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/e.S") << kEpilogues;
  RunResult r =
      sh("cd " + dir +
         " && gcc -nostdlib -shared -Wl,--build-id -o e.so e.S && llvm-nm-19 --defined-only e.so");
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, uint64_t> at;
  std::istringstream lines(r.out);
  for (std::string addr, kind, name; lines >> addr >> kind >> name;) {
    at[name] = std::stoull(addr, nullptr, 16);
  }
  ASSERT_EQ(at.count("outer_zone_after"), 1U) << r.out;
  auto set = unwind::register_set("x86_64");
  ASSERT_TRUE(set);
  auto cfi = cfi_of(dir + "/e.so", *set);
  ASSERT_NE(cfi, nullptr);
  BuiltCode code(*cfi);

  // At leaf's (or zone's) ret: the return address into outer at sp, then outer's frame: its
  // caller's rbp and its return address.
  const uint64_t sp = 0x7ffff000, frame = sp + 8, caller = 0x900010;
  auto stack_returning_to = [&](uint64_t ret) {
    std::vector<uint8_t> stack(24, 0);
    const uint64_t words[] = {ret, 0x7ffff100, caller};
    std::memcpy(stack.data(), words, sizeof words);
    return stack;
  };
  unwind::Registers regs;
  regs.set(7, sp);     // rsp
  regs.set(6, frame);  // rbp: outer's frame pointer, restored by the pop

  const auto leaf_stack = stack_returning_to(at["outer_after"]);
  auto u = unwind::unwind(*set, regs, at["leaf_ret"], {sp, leaf_stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 3U);
  EXPECT_EQ(u.frames[1], at["outer_after"] - 1);
  EXPECT_EQ(u.frames[2], caller - 1);
  EXPECT_EQ(u.stop, unwind::Unwound::Stop::kNoCfi);

  // The red zone's slot: rbp is unknown in outer, whose CFA needs it. The register holds outer's
  // frame pointer here, but nothing says that zone left it so (its code did not).
  const auto zone_stack = stack_returning_to(at["outer_zone_after"]);
  u = unwind::unwind(*set, regs, at["zone_ret"], {sp, zone_stack, kLittle}, code, 16);
  ASSERT_EQ(u.frames.size(), 2U);
  EXPECT_EQ(u.frames[1], at["outer_zone_after"] - 1);
  EXPECT_EQ(u.stop, unwind::Unwound::Stop::kBadRule);
  fs::remove_all(dir);
}

// The entry points of the functions libc exports: pcs in some two thousand of its FDEs.
std::vector<uint64_t> libc_functions() {
  RunResult r = sh("llvm-nm-19 -D --defined-only /usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(r.status, 0) << r.err;
  std::set<uint64_t> at;
  std::istringstream lines(r.out);
  for (std::string addr, kind, name; lines >> addr >> kind >> name;) {
    if (kind == "T" || kind == "i" || kind == "W") at.insert(std::stoull(addr, nullptr, 16));
  }
  return {at.begin(), at.end()};
}

std::unique_ptr<unwind::CfiTable> libc_cfi(unwind::CfiCache& cache) {
  auto set = unwind::register_set("x86_64");
  auto buffer = llvm::MemoryBuffer::getFile("/usr/lib/x86_64-linux-gnu/libc.so.6");
  if (!set || !buffer) return nullptr;
  auto cfi = unwind::CfiTable::build(std::move(*buffer), *set, &cache);
  return cfi.ok() ? *std::move(cfi) : nullptr;
}

// What a row says, to compare rows of two tables.
std::string describe(const unwind::CfiRow* row) {
  if (row == nullptr) return "none";
  std::ostringstream out;
  out << row->begin << "-" << row->end << " cfa " << int{row->cfa.kind} << " " << int{row->cfa.reg}
      << "+" << row->cfa.offset;
  for (const unwind::RegRule& r : row->rules) {
    out << " r" << int{r.reg} << ":" << int{r.rule.kind} << "/" << r.rule.offset;
  }
  return out.str();
}

// A system-wide recording's samples fall in thousands of FDEs, again and again: each is evaluated
// once while the cache holds them (a cache of 256 FDEs a table evaluated them 17 times over).
TEST(CfiCache, EachFdeIsEvaluatedOnceWhileItsRowsFit) {
  unwind::CfiCache cache;
  auto cfi = libc_cfi(cache);
  ASSERT_NE(cfi, nullptr);
  const std::vector<uint64_t> pcs = libc_functions();
  size_t found = 0;
  for (const uint64_t pc : pcs) found += cfi->find(pc) != nullptr;
  const uint64_t first = cache.evaluations();
  std::cout << "  " << found << " of " << pcs.size() << " libc functions have a row; " << first
            << " FDEs evaluated, " << cache.bytes() << " bytes kept\n";
  ASSERT_GT(first, 1000U);
  for (int round = 0; round < 3; ++round) {
    for (const uint64_t pc : pcs) cfi->find(pc);
  }
  EXPECT_EQ(cache.evaluations(), first);
  EXPECT_EQ(cache.evictions(), 0U);
  EXPECT_EQ(cfi->cached_fdes(), first);
}

// Past its bound the cache drops what was used least recently, of every table: the bytes stay
// within it, and the rows found are the same as with all of them kept.
TEST(CfiCache, ABoundedCacheDropsRowsAndFindsTheSame) {
  constexpr uint64_t kBound = 64 << 10;
  unwind::CfiCache small(kBound), large;
  auto a = libc_cfi(small), b = libc_cfi(small), whole = libc_cfi(large);
  ASSERT_TRUE(a && b && whole);
  const std::vector<uint64_t> pcs = libc_functions();
  size_t differ = 0;
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < pcs.size(); ++i) {
      unwind::CfiTable& t = i % 2 == 0 ? *a : *b;
      const std::string expected = describe(whole->find(pcs[i]));
      differ += describe(t.find(pcs[i])) != expected;
      EXPECT_LE(small.bytes(), kBound);
    }
  }
  EXPECT_EQ(differ, 0U);
  EXPECT_GT(small.evictions(), 0U);
  EXPECT_GT(small.evaluations(), large.evaluations());
  b.reset();  // a table's rows leave the cache with it
  EXPECT_LE(small.bytes(), kBound);
  a.reset();
  EXPECT_EQ(small.bytes(), 0U);
}

}  // namespace
}  // namespace pdfix::e2e
