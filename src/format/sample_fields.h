// Where the variable-length fields of a SAMPLE sit, up to the user stack: what a pass needs to
// replace a callchain or drop the user registers and stack while copying every other byte.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "format/attr.h"
#include "format/byte_order.h"
#include "format/records.h"

namespace pdfix::format {

// A field's bytes in the record: [at, end).
struct FieldSpan {
  uint64_t at = 0;
  uint64_t end = 0;
};

struct SampleFields {
  SampleHead head;
  uint64_t head_end = 0;  // past the fixed fields and READ: where CALLCHAIN is, or would be
  std::optional<FieldSpan> callchain;
  std::optional<FieldSpan> regs_user;   // u64 abi, then a u64 per bit of sample_regs_user
  std::optional<FieldSpan> stack_user;  // u64 size, the bytes, u64 dyn_size
  uint64_t stack_user_end = 0;          // past STACK_USER, or where it would be
};

// What the sample_type, read_format, branch_sample_type and sample_regs_user of `attr` lay out,
// checked against the record's size. `file_offset` is for errors.
absl::StatusOr<SampleFields> locate_sample_fields(std::span<const uint8_t> record, const Endian& e,
                                                  const EventAttr& attr, uint64_t file_offset);

// The user registers and stack of one sample, as views of its bytes.
struct UserStack {
  uint64_t abi = 0;                // 0: none were taken (a kernel thread); 1: 32-bit, 2: 64-bit
  std::span<const uint8_t> regs;   // one u64 per bit of sample_regs_user, lowest bit first
  std::span<const uint8_t> stack;  // the dyn_size bytes copied from the user stack pointer up
};
UserStack user_stack(std::span<const uint8_t> record, const Endian& e, const SampleFields& f);

// PERF_SAMPLE_REGS_ABI_64: the registers are a 64-bit task's.
inline constexpr uint64_t kRegsAbi64 = 2;
// A 64-bit task's user registers, by perf's register number: `f(number, value)` for each bit of
// `mask` (the attr's sample_regs_user), lowest first. False, and nothing called, when the sample
// took none, took a 32-bit task's, or holds other than one u64 a bit.
template <typename F>
bool for_each_user_reg(const UserStack& u, uint64_t mask, const Endian& e, F&& f) {
  if (u.abi != kRegsAbi64 || u.regs.size() != 8 * static_cast<size_t>(std::popcount(mask))) {
    return false;
  }
  size_t i = 0;
  for (uint32_t bit = 0; bit < 64; ++bit) {
    if ((mask & (uint64_t{1} << bit)) != 0) f(bit, e.u64(u.regs.data() + 8 * i++));
  }
  return true;
}

// The callchain's entries, context markers included; empty without CALLCHAIN.
std::vector<uint64_t> callchain_entries(std::span<const uint8_t> record, const Endian& e,
                                        const SampleFields& f);
// The same into `entries`, whose memory a caller reuses sample after sample.
void callchain_entries(std::span<const uint8_t> record, const Endian& e, const SampleFields& f,
                       std::vector<uint64_t>& entries);

// What the kernel wrote of a callchain's entries: those before PERF_CONTEXT_USER (the kernel's
// frames, with their context marker), the user part cut off.
void keep_kernel_part(std::vector<uint64_t>& entries);

// The sample anew with `chain` for its callchain (which it must have), every other field's bytes
// as they were. An error when it would outgrow a record.
absl::StatusOr<std::vector<uint8_t>> with_callchain(std::span<const uint8_t> record,
                                                    const Endian& e, const SampleFields& f,
                                                    std::span<const uint64_t> chain,
                                                    uint64_t file_offset);

// The sample anew, its user stack unwound: `chain` for its callchain, and no user registers or
// stack; every other field's bytes as they were. An error when it would outgrow a record.
absl::StatusOr<std::vector<uint8_t>> with_user_callchain(std::span<const uint8_t> record,
                                                         const Endian& e, const SampleFields& f,
                                                         std::span<const uint64_t> chain,
                                                         uint64_t file_offset);
// The same into `out`, whose memory a caller reuses sample after sample.
absl::Status with_user_callchain(std::span<const uint8_t> record, const Endian& e,
                                 const SampleFields& f, std::span<const uint64_t> chain,
                                 uint64_t file_offset, std::vector<uint8_t>& out);

}  // namespace pdfix::format
