// perf's machines: the host, and each guest by its pid. Records and build-id entries tell theirs
// by cpumode and pid; the kernel of each has a name of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "format/record_type.h"

namespace pdfix::format {

inline constexpr uint64_t kHostMachine = 0;

inline bool is_guest_mode(uint16_t misc) {
  const uint16_t mode = misc & kCpuModeMask;
  return mode == kCpuModeGuestKernel || mode == kCpuModeGuestUser;
}

// Host records share one machine; a guest's are its own, keyed by the guest's pid.
inline uint64_t machine_of(uint16_t misc, uint32_t pid) {
  return is_guest_mode(misc) ? (uint64_t{1} << 32) | pid : kHostMachine;
}

// A guest machine's pid (the key's low half); 0 for the host.
inline int32_t machine_pid(uint64_t machine) { return static_cast<int32_t>(machine & 0xffffffff); }

inline std::string machine_label(uint64_t machine) {
  if (machine == kHostMachine) return "host";
  return absl::StrCat("guest ", machine_pid(machine));
}

// perf's name for a machine's kernel (machine->mmap_name): the DSO of its kernel map.
inline std::string kernel_name(uint64_t machine) {
  if (machine == kHostMachine) return "[kernel.kallsyms]";
  const int32_t pid = machine_pid(machine);
  return pid == 0 ? "[guest.kernel.kallsyms]" : absl::StrCat("[guest.kernel.kallsyms.", pid, "]");
}

// A kernel map's file name: "[kernel.kallsyms]_text" and the like, or a guest's.
inline bool is_kernel_image_name(std::string_view filename) {
  return filename.starts_with("[kernel.kallsyms]") ||
         filename.starts_with("[guest.kernel.kallsyms");
}

}  // namespace pdfix::format
