#include "passes/compat.h"
#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "passes/inject_jit.h"
#include "passes/repair.h"
#include "passes/repair_build_ids.h"
#include "passes/tag_kernel.h"
#include "passes/unwind_stacks.h"

namespace pdfix::passes {

std::vector<std::unique_ptr<RepairKind>> repair_kinds() {
  std::vector<std::unique_ptr<RepairKind>> kinds;
  // The kernel tag decides from repaired module maps and ids; injection finds the kernel map
  // tagged, and lists only ids that survived the repair.
  kinds.push_back(fix_module_sizes_kind());
  kinds.push_back(repair_build_ids_kind());
  kinds.push_back(tag_kernel_kind());
  // Its maps carry their ids: injection lists them in the table as it does any id a record holds.
  kinds.push_back(inject_jit_kind());
  kinds.push_back(inject_build_ids_kind());
  // Finds its binaries by the ids injection proved.
  kinds.push_back(unwind_stacks_kind());
  // Last: what the others wrote is then rewritten for the older reader too.
  kinds.push_back(compat_kind());
  return kinds;
}

}  // namespace pdfix::passes
