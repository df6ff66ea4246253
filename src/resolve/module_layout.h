// How much memory the kernel gives a module, worked out from the module's own ELF file: its
// allocated sections placed the way the module loader places them.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"

namespace pdfix::resolve {

struct ModuleLayout {
  // Bytes from the module's base address to the end of its last allocated section, every group
  // (text, read-only, read-only after init, writable) page-aligned as with STRICT_MODULE_RWX.
  // Init sections are freed after loading and not counted; neither is the kernel's copy of the
  // module's symbol table, so this can fall short of /proc/modules by a page or two.
  uint64_t size = 0;
  // Where .text lands in that layout (perf maps s390 modules from .text, not from the base).
  uint64_t text_offset = 0;
};

// An error whose code is InvalidArgument: not a relocatable ELF object.
absl::StatusOr<ModuleLayout> module_layout(std::span<const uint8_t> elf);

}  // namespace pdfix::resolve
