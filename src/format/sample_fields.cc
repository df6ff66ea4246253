#include "format/sample_fields.h"

#include <algorithm>
#include <bit>

#include "format/error.h"
#include "format/records.h"

namespace pdfix::format {
namespace {

constexpr uint64_t kBranchHwIndex = uint64_t{1} << 17;
constexpr uint64_t kBranchCounters = uint64_t{1} << 19;
constexpr uint64_t kBranchEntryBytes = 24;

}  // namespace

absl::StatusOr<SampleFields> locate_sample_fields(std::span<const uint8_t> record, const Endian& e,
                                                  const EventAttr& attr, uint64_t file_offset) {
  const uint64_t st = attr.sample_type;
  auto head = decode_sample_head(record, e, st, file_offset);
  if (!head.ok()) return head.status();
  const uint64_t size = record.size();
  uint64_t pos = head->end;
  // Each step checks its count against what is left before multiplying, so no count can wrap.
  auto u64_at = [&](uint64_t at) -> std::optional<uint64_t> {
    if (at > size || size - at < 8) return std::nullopt;
    return e.u64(record.data() + at);
  };
  auto words_left = [&] { return pos <= size ? (size - pos) / 8 : 0; };
  auto too_short = [&](const char* field) {
    return malformed_at(file_offset, "SAMPLE of ", size, " bytes ends in its ", field);
  };
  auto read_end = sample_read_end(record, e, st, attr.read_format, pos, file_offset);
  if (!read_end.ok()) return read_end.status();
  pos = *read_end;
  SampleFields f;
  f.head = *head;
  f.head_end = pos;
  if (st & kSampleCallchain) {
    auto nr = u64_at(pos);
    if (!nr || *nr >= words_left()) return too_short("callchain");
    f.callchain = FieldSpan{pos, pos + 8 + 8 * *nr};
    pos = f.callchain->end;
  }
  if (st & kSampleRaw) {
    if (pos > size || size - pos < 4) return too_short("RAW data");
    const uint64_t raw = e.u32(record.data() + pos);
    if (raw > size - pos - 4) return too_short("RAW data");
    pos += 4 + raw;
  }
  if (st & kSampleBranchStack) {
    auto nr = u64_at(pos);
    if (!nr) return too_short("branch stack");
    pos += 8;
    if (attr.branch_sample_type & kBranchHwIndex) pos += 8;
    const uint64_t per = kBranchEntryBytes + ((attr.branch_sample_type & kBranchCounters) ? 8 : 0);
    if (pos > size || *nr > (size - pos) / per) return too_short("branch stack");
    pos += *nr * per;
  }
  if (st & kSampleRegsUser) {
    auto abi = u64_at(pos);
    if (!abi) return too_short("user registers");
    const uint64_t n = *abi == 0 ? 0 : std::popcount(attr.sample_regs_user);
    if (n >= words_left()) return too_short("user registers");
    f.regs_user = FieldSpan{pos, pos + 8 + 8 * n};
    pos = f.regs_user->end;
  }
  if (st & kSampleStackUser) {
    auto bytes = u64_at(pos);
    if (!bytes) return too_short("user stack");
    const uint64_t at = pos;
    pos += 8;
    if (*bytes != 0) {
      if (*bytes > size - pos || size - pos - *bytes < 8) return too_short("user stack");
      pos += *bytes + 8;
    }
    f.stack_user = FieldSpan{at, pos};
  }
  f.stack_user_end = pos;
  return f;
}

UserStack user_stack(std::span<const uint8_t> record, const Endian& e, const SampleFields& f) {
  UserStack u;
  if (f.regs_user) {
    u.abi = e.u64(record.data() + f.regs_user->at);
    u.regs = record.subspan(f.regs_user->at + 8, f.regs_user->end - f.regs_user->at - 8);
  }
  if (f.stack_user && f.stack_user->end - f.stack_user->at > 8) {
    const uint64_t size = e.u64(record.data() + f.stack_user->at);
    const uint64_t dyn = e.u64(record.data() + f.stack_user->end - 8);
    u.stack = record.subspan(f.stack_user->at + 8, std::min(size, dyn));
  }
  return u;
}

std::vector<uint64_t> callchain_entries(std::span<const uint8_t> record, const Endian& e,
                                        const SampleFields& f) {
  std::vector<uint64_t> entries;
  callchain_entries(record, e, f, entries);
  return entries;
}

void callchain_entries(std::span<const uint8_t> record, const Endian& e, const SampleFields& f,
                       std::vector<uint64_t>& entries) {
  entries.clear();
  if (!f.callchain) return;
  entries.reserve((f.callchain->end - f.callchain->at) / 8);
  for (uint64_t at = f.callchain->at + 8; at < f.callchain->end; at += 8) {
    entries.push_back(e.u64(record.data() + at));
  }
}

namespace {

// The head, `chain`, the bytes in [kept_from, kept_to) and the bytes from `tail_from` on, under a
// header of the new size, into `bytes`.
absl::Status rebuild_with_chain(std::span<const uint8_t> record, const Endian& e, uint64_t head_end,
                                std::span<const uint64_t> chain, uint64_t kept_from,
                                uint64_t kept_to, uint64_t tail_from, uint64_t file_offset,
                                std::vector<uint8_t>& bytes) {
  // One allocation at most, of the size the record will have.
  bytes.reserve(head_end + 8 * (chain.size() + 1) + (kept_to - kept_from) +
                (record.size() - tail_from));
  bytes.assign(record.begin(), record.begin() + static_cast<ptrdiff_t>(head_end));
  const size_t nr_at = bytes.size();
  bytes.resize(nr_at + 8 * (chain.size() + 1));
  e.put_u64(bytes.data() + nr_at, chain.size());
  for (size_t k = 0; k < chain.size(); ++k) {
    e.put_u64(bytes.data() + nr_at + 8 * (k + 1), chain[k]);
  }
  bytes.insert(bytes.end(), record.begin() + static_cast<ptrdiff_t>(kept_from),
               record.begin() + static_cast<ptrdiff_t>(kept_to));
  bytes.insert(bytes.end(), record.begin() + static_cast<ptrdiff_t>(tail_from), record.end());
  if (bytes.size() > UINT16_MAX) {
    return malformed_at(file_offset, "SAMPLE would grow past 64 KiB with its callchain");
  }
  const RecordHeader h = read_record_header(e, record.data());
  write_record_header(e, bytes.data(), {h.type, h.misc, static_cast<uint16_t>(bytes.size())});
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> rebuilt_with_chain(std::span<const uint8_t> record,
                                                        const Endian& e, uint64_t head_end,
                                                        std::span<const uint64_t> chain,
                                                        uint64_t kept_from, uint64_t kept_to,
                                                        uint64_t tail_from, uint64_t file_offset) {
  std::vector<uint8_t> bytes;
  if (auto s = rebuild_with_chain(record, e, head_end, chain, kept_from, kept_to, tail_from,
                                  file_offset, bytes);
      !s.ok()) {
    return s;
  }
  return bytes;
}

// Where with_user_callchain cuts: the head, the callchain, what lies between the callchain and
// the user registers (RAW, BRANCH_STACK), and everything after the user stack.
struct UserCut {
  uint64_t chain_end;
  uint64_t regs_at;
};
UserCut user_cut(const SampleFields& f) {
  const uint64_t chain_end = f.callchain ? f.callchain->end : f.head_end;
  return {chain_end, f.regs_user ? f.regs_user->at : (f.stack_user ? f.stack_user->at : chain_end)};
}

}  // namespace

void keep_kernel_part(std::vector<uint64_t>& entries) {
  entries.erase(std::find(entries.begin(), entries.end(), kContextUser), entries.end());
}

absl::StatusOr<std::vector<uint8_t>> with_callchain(std::span<const uint8_t> record,
                                                    const Endian& e, const SampleFields& f,
                                                    std::span<const uint64_t> chain,
                                                    uint64_t file_offset) {
  if (!f.callchain) return malformed_at(file_offset, "SAMPLE has no callchain to replace");
  const uint64_t end = f.callchain->end;
  return rebuilt_with_chain(record, e, f.head_end, chain, end, end, end, file_offset);
}

absl::StatusOr<std::vector<uint8_t>> with_user_callchain(std::span<const uint8_t> record,
                                                         const Endian& e, const SampleFields& f,
                                                         std::span<const uint64_t> chain,
                                                         uint64_t file_offset) {
  const UserCut cut = user_cut(f);
  return rebuilt_with_chain(record, e, f.head_end, chain, cut.chain_end, cut.regs_at,
                            f.stack_user_end, file_offset);
}

absl::Status with_user_callchain(std::span<const uint8_t> record, const Endian& e,
                                 const SampleFields& f, std::span<const uint64_t> chain,
                                 uint64_t file_offset, std::vector<uint8_t>& out) {
  const UserCut cut = user_cut(f);
  return rebuild_with_chain(record, e, f.head_end, chain, cut.chain_end, cut.regs_at,
                            f.stack_user_end, file_offset, out);
}

}  // namespace pdfix::format
