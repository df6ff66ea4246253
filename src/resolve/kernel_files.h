// Where distributions install a kernel release's files: its ELF image and its modules. The one
// place that knows these paths (scripts/lint.sh fails on /lib/modules anywhere else in src/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pdfix::resolve {

// The ELF image of kernel `release` (a vmlinux, with or without debug information), most specific
// first, relative to a root.
std::vector<std::string> vmlinux_paths(std::string_view release);

// The directory of kernel `release`'s modules (/lib/modules/<release>), relative to a root.
std::string modules_dir(std::string_view release);

}  // namespace pdfix::resolve
