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

}  // namespace pdfix::resolve
