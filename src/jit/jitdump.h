// A jitdump (jit-PID.dump), the file a JIT runtime writes for perf: a header, then records of code
// loaded, moved, its line numbers and its unwinding tables (the format of the kernel tree's
// tools/perf/Documentation/jitdump-specification.txt). Parsed as views into the dump's bytes;
// either byte order; a dump cut off mid-record keeps its whole records.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "format/records.h"

namespace pdfix::jit {

struct CodeLoad {
  uint64_t timestamp = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t code_addr = 0;
  uint64_t code_index = 0;
  std::string_view name;
  std::span<const uint8_t> code;
  // JIT_CODE_UNWINDING_INFO that came before this load: .eh_frame_hdr then .eh_frame, as laid out
  // to follow the code in memory (8-byte aligned).
  std::span<const uint8_t> unwinding;
  uint64_t eh_frame_hdr_size = 0;
  // The JIT_CODE_DEBUG_INFO for this code that came before it (an index into JitDump::debug_info).
  std::optional<size_t> lines;
};

struct CodeMove {
  uint64_t timestamp = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t old_code_addr = 0;
  uint64_t new_code_addr = 0;
  uint64_t code_size = 0;
  uint64_t code_index = 0;
};

struct LineEntry {
  uint64_t addr = 0;
  uint32_t line = 0;
  uint32_t discriminator = 0;
  std::string_view file;
};

// JIT_CODE_DEBUG_INFO: the lines of the code that the next load at `code_addr` brings; each
// entry's `addr` is in the process.
struct DebugInfo {
  uint64_t code_addr = 0;
  std::vector<LineEntry> entries;
};

struct JitDump {
  bool swapped = false;  // written on a host of the other byte order
  uint32_t version = 0;
  uint32_t elf_machine = 0;
  uint32_t pid = 0;
  uint64_t timestamp = 0;
  // Times come from the CPU's counter (TSC), not from the clock perf was given with -k.
  bool arch_timestamp = false;
  std::vector<CodeLoad> loads;
  std::vector<CodeMove> moves;
  std::vector<DebugInfo> debug_info;
  // Where the dump stops being whole, when it was cut off (the runtime was killed mid-write, or
  // the copy is short); nullopt when every byte belongs to a whole record.
  std::optional<uint64_t> cut_at;
};

// The dump in `bytes`, which must outlive the result. An error for what is no jitdump or a version
// this reader does not know.
absl::StatusOr<JitDump> parse_jitdump(std::span<const uint8_t> bytes);

// "jit-1234.dump" at the end of a path: the pid the runtime named it for.
std::optional<uint32_t> jitdump_pid(std::string_view path);

// The pid a JIT runtime's marker names: a map of its jitdump, in user mode and executable (V8 and
// perf's JVMTI agent map it so, for perf to record without -d). A map of a dump that is not
// executable is some reader of it (perf, pdfix --jit-dir): perf records those too when asked for
// data maps, and --call-graph dwarf asks.
std::optional<uint32_t> marker_pid(const format::MmapRecord& m);

}  // namespace pdfix::jit
