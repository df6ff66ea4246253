#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "passes/repair.h"
#include "passes/tag_kernel.h"

namespace pdfix::passes {

std::vector<std::unique_ptr<RepairKind>> repair_kinds() {
  std::vector<std::unique_ptr<RepairKind>> kinds;
  // The kernel tag decides from repaired module maps; injection finds the kernel map tagged.
  kinds.push_back(fix_module_sizes_kind());
  kinds.push_back(tag_kernel_kind());
  kinds.push_back(inject_build_ids_kind());
  return kinds;
}

}  // namespace pdfix::passes
