#include "jit/jitdump.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "format/byte_order.h"
#include "format/map_kind.h"

namespace pdfix::jit {
namespace {

constexpr uint32_t kMagic = 0x4A695444;  // "JiTD" in the writer's order
constexpr uint32_t kMagicSwapped = 0x4454694A;
constexpr uint32_t kHeaderSize = 40;
constexpr uint32_t kRecordHeaderSize = 16;  // id, total_size, timestamp
constexpr uint64_t kFlagArchTimestamp = 1;

enum RecordId : uint32_t {
  kCodeLoad = 0,
  kCodeMove = 1,
  kDebugInfo = 2,
  kClose = 3,
  kUnwindingInfo = 4,
};

// A NUL-terminated string at `at` in `body`; nullopt when the NUL is missing.
std::optional<std::string_view> c_string(std::span<const uint8_t> body, size_t& at) {
  for (size_t i = at; i < body.size(); ++i) {
    if (body[i] == 0) {
      std::string_view s(reinterpret_cast<const char*>(body.data()) + at, i - at);
      at = i + 1;
      return s;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint32_t> jitdump_pid(std::string_view path) {
  const std::string_view base = path.substr(path.rfind('/') + 1);
  if (!base.starts_with("jit-") || !base.ends_with(".dump")) return std::nullopt;
  const std::string_view digits = base.substr(4, base.size() - 4 - 5);
  uint32_t pid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty()) {
    return std::nullopt;
  }
  return pid;
}

absl::StatusOr<JitDump> parse_jitdump(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("no jitdump: ", bytes.size(), " bytes, shorter than its header"));
  }
  JitDump d;
  const uint32_t magic = format::Endian::host().u32(bytes.data());
  if (magic != kMagic && magic != kMagicSwapped) {
    return absl::InvalidArgumentError("no jitdump: its first four bytes are not \"JiTD\"");
  }
  const format::Endian e = magic == kMagic ? format::Endian::host() : format::Endian::swapped();
  d.swapped = e.is_swapped();
  d.version = e.u32(bytes.data() + 4);
  const uint32_t header_size = e.u32(bytes.data() + 8);
  if (d.version != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("jitdump version ", d.version, ": only version 1 is known"));
  }
  if (header_size < kHeaderSize || header_size > bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("jitdump header of ", header_size, " bytes in a file of ", bytes.size()));
  }
  d.elf_machine = e.u32(bytes.data() + 12);
  d.pid = e.u32(bytes.data() + 20);
  d.timestamp = e.u64(bytes.data() + 24);
  d.arch_timestamp = (e.u64(bytes.data() + 32) & kFlagArchTimestamp) != 0;

  std::optional<std::span<const uint8_t>> unwinding;
  std::optional<size_t> lines;  // a DEBUG_INFO, for the load that follows it
  uint64_t eh_frame_hdr_size = 0;
  uint64_t at = header_size;
  auto cut = [&](uint64_t where) {
    d.cut_at = where;
    return d;
  };
  while (at < bytes.size()) {
    if (bytes.size() - at < kRecordHeaderSize) return cut(at);
    const uint8_t* p = bytes.data() + at;
    const uint32_t id = e.u32(p);
    const uint32_t size = e.u32(p + 4);
    const uint64_t timestamp = e.u64(p + 8);
    if (size < kRecordHeaderSize || size > bytes.size() - at) return cut(at);
    const std::span<const uint8_t> body =
        bytes.subspan(at + kRecordHeaderSize, size - kRecordHeaderSize);
    const uint8_t* b = body.data();
    switch (id) {
      case kCodeLoad: {
        if (body.size() < 40) return cut(at);
        CodeLoad l{.timestamp = timestamp, .pid = e.u32(b), .tid = e.u32(b + 4)};
        l.code_addr = e.u64(b + 16);
        const uint64_t code_size = e.u64(b + 24);
        l.code_index = e.u64(b + 32);
        size_t name_at = 40;
        auto name = c_string(body, name_at);
        if (!name || code_size > body.size() - name_at) return cut(at);
        l.name = *name;
        l.code = body.subspan(name_at, code_size);
        if (unwinding) {
          l.unwinding = *unwinding;
          l.eh_frame_hdr_size = eh_frame_hdr_size;
          unwinding.reset();
        }
        // Lines are for the load right after them: a later load at the address is other code.
        if (lines && d.debug_info[*lines].code_addr == l.code_addr) l.lines = lines;
        lines.reset();
        d.loads.push_back(l);
        break;
      }
      case kCodeMove: {
        if (body.size() < 48) return cut(at);
        d.moves.push_back({.timestamp = timestamp,
                           .pid = e.u32(b),
                           .tid = e.u32(b + 4),
                           .old_code_addr = e.u64(b + 16),
                           .new_code_addr = e.u64(b + 24),
                           .code_size = e.u64(b + 32),
                           .code_index = e.u64(b + 40)});
        break;
      }
      case kDebugInfo: {
        if (body.size() < 16) return cut(at);
        DebugInfo info{.code_addr = e.u64(b)};
        const uint64_t n = e.u64(b + 8);
        size_t entry_at = 16;
        std::string_view previous;
        for (uint64_t i = 0; i < n; ++i) {
          if (body.size() - entry_at < 16) return cut(at);
          LineEntry entry{.addr = e.u64(b + entry_at),
                          .line = e.u32(b + entry_at + 8),
                          .discriminator = e.u32(b + entry_at + 12)};
          entry_at += 16;
          auto file = c_string(body, entry_at);
          if (!file) return cut(at);
          // "\xff" names the same file as the entry before.
          entry.file = *file == "\xff" ? previous : *file;
          previous = entry.file;
          info.entries.push_back(entry);
        }
        lines = d.debug_info.size();
        d.debug_info.push_back(std::move(info));
        break;
      }
      case kUnwindingInfo: {
        if (body.size() < 24) return cut(at);
        const uint64_t unwinding_size = e.u64(b);
        eh_frame_hdr_size = e.u64(b + 8);
        if (unwinding_size > body.size() - 24 || eh_frame_hdr_size > unwinding_size) {
          return cut(at);
        }
        unwinding = body.subspan(24, unwinding_size);
        break;
      }
      case kClose:
        return d;
      default:
        break;  // a record of a later version: its size says how to step over it
    }
    at += size;
  }
  return d;
}

std::optional<uint32_t> marker_pid(const format::MmapRecord& m) {
  if (format::is_kernel_mode(m.misc) ||
      (format::mmap2_prot_flags(m).prot & format::kProtExec) == 0) {
    return std::nullopt;
  }
  return jitdump_pid(m.filename);
}

}  // namespace pdfix::jit
