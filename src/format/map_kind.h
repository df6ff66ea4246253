// What a map record maps, told from its file name and cpumode the way perf tells it: the kernel
// image, a kernel module, the vdso, a file, or memory with no file behind it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/record_type.h"

namespace pdfix::format {

enum class MapKind { kFile, kKernel, kModule, kVdso, kAnonymous };
MapKind classify(std::string_view filename, uint16_t misc);

// Whether a map of this kind can carry a build-id: memory with no file behind it (//anon,
// [heap], [stack], memfd, SysV) has none, whatever its record says. Out of line: a rule that
// scripts/mutants.list mutates rebuilds one unit, not every unit that includes this header.
bool may_carry_build_id(MapKind kind);

// Kernel or guest-kernel cpumode: the maps and table entries of a machine's kernel side.
inline bool is_kernel_mode(uint16_t misc) {
  const uint16_t mode = misc & kCpuModeMask;
  return mode == kCpuModeKernel || mode == kCpuModeGuestKernel;
}

// A user map of executable memory with no file behind it that runtimes name (anonymous, memfd):
// where JIT code lives.
bool is_anonymous_code(std::string_view filename, uint16_t misc);

// The kernel's name for a module map: "[nf_tables]" or ".../nf_tables.ko.xz" -> "nf_tables".
std::string module_name(std::string_view filename);

// A file name perf and the kernel give modules: ".ko", possibly compressed.
bool looks_like_module_file(std::string_view filename);

// "[kernel.kallsyms]" or a guest's "[guest.kernel.kallsyms...]": a kernel tag, not a path.
inline bool is_kernel_tag(std::string_view name) {
  return name == "[kernel.kallsyms]" || name.starts_with("[guest.kernel.kallsyms");
}

}  // namespace pdfix::format
