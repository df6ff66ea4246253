// Where an architecture's kernel puts loadable modules: the upper bound of the module area, for
// judging whether a module map's extent is possible at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pdfix::resolve {

// The end of the module area that holds a module loaded at `module_start`, on the architecture
// named by the recording's ARCH feature (`uname -m`). nullopt where the sources give no bound
// that holds across kernel versions and configurations (aarch64, ppc64, riscv64: there a module
// is still bounded by the next module and by the kernel image, which the caller knows).
std::optional<uint64_t> module_area_end(std::string_view arch, uint64_t module_start);

// The architecture a recording must be from whose kernel image starts at `kernel_start` with a
// module mapped at `module_start` above it, where the addresses leave one: "x86_64" (its kernel
// text lies in [-2 GiB, -1 GiB) with the modules above it, from 0xffffffffa0000000; riscv64 puts
// its kernel there too, but its modules below it). Empty where they leave several. For recordings
// with no ARCH feature (pipe mode before perf 4.x).
std::string_view arch_by_layout(uint64_t kernel_start, uint64_t module_start);

}  // namespace pdfix::resolve
