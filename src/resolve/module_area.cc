#include "resolve/module_area.h"

namespace pdfix::resolve {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

bool is_i386(std::string_view arch) {
  return arch.size() == 4 && arch[0] == 'i' && arch.substr(2) == "86";
}

}  // namespace

std::optional<uint64_t> module_area_end(std::string_view arch, uint64_t module_start) {
  if (arch == "x86_64" || arch == "amd64") {
    // arch/x86/include/asm/pgtable_64_types.h: MODULES_END is fixed; MODULES_VADDR is
    // 0xffffffffa0000000, or 0xffffffffc0000000 with a 1 GiB KASLR image area.
    constexpr uint64_t kModulesEnd = 0xffffffffff000000;
    if (module_start < kModulesEnd) return kModulesEnd;
    return std::nullopt;
  }
  if (is_i386(arch)) {
    // arch/x86/include/asm/pgtable_32_areas.h: modules live in the vmalloc area, which ends below
    // the fixmap; the fixmap's top, __FIXADDR_TOP, is 0xfffff000 at most.
    return uint64_t{0xfffff000};
  }
  if (arch.starts_with("arm") && arch != "arm64") {
    // arch/arm/include/asm/memory.h: MODULES_VADDR = PAGE_OFFSET - 16 MiB (8 MiB for Thumb-2),
    // MODULES_END = PAGE_OFFSET, and PAGE_OFFSET (CONFIG_PAGE_OFFSET) is a multiple of 16 MiB:
    // the area ends at the first 16 MiB boundary above the module.
    return (module_start | (16 * kMiB - 1)) + 1;
  }
  if (arch == "s390x") {
    // arch/s390 before KASLR moved the area below the kernel image: MODULES_END was the top of
    // the 3-level (4 TiB) or 4-level (8 PiB) address space, MODULES_LEN 2 GiB below it.
    for (uint64_t end : {uint64_t{1} << 42, uint64_t{1} << 53}) {
      if (module_start < end && module_start >= end - 2 * kGiB) return end;
    }
    return std::nullopt;
  }
  if (arch == "s390") return uint64_t{1} << 31;  // 31-bit addressing
  return std::nullopt;
}

std::string_view arch_by_layout(uint64_t kernel_start, uint64_t module_start) {
  if (kernel_start >= 0xffffffff80000000ULL && kernel_start < 0xffffffffc0000000ULL &&
      module_start >= 0xffffffffa0000000ULL && module_start > kernel_start) {
    return "x86_64";
  }
  return {};
}

}  // namespace pdfix::resolve
