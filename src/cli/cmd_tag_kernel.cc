#include <iostream>

#include "cli/commands.h"
#include "cli/pass_options.h"
#include "cli/summary.h"
#include "passes/tag_kernel.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix tag-kernel - name the kernel's build-id table entry the way readers match it

SYNOPSIS
    pdfix tag-kernel [--json] IN OUT

DESCRIPTION
    perf report gives the kernel map the build-id of the first kernel-mode table entry that is
    not a module, and name-matching readers look for "[kernel.kallsyms]". Old and third-party
    recordings file the kernel under a vmlinux path, or put an out-of-tree or compressed module
    (.ko.xz, .ko.zst, [name]) first, and the kernel gets the wrong id or loses its symbols.

    This verb decides which entry is the kernel from the data: the module maps name the modules,
    and the kernel image is the kernel-mode entry that no module map names (the kernel map's own
    build-id settles a tie). It then adds a "[kernel.kallsyms]" entry with that id (guests keep
    "[guest.kernel.kallsyms]" / "[guest.kernel.kallsyms.<pid>]" and their pid) at the head of the
    table, keeping the entry it was filed under, pathname and all. A kernel map record without a
    build-id gets this one. When it cannot be decided, nothing changes and the report says why.

    A table written by perf 6.12.0, whose entry sizes are wrong, is read as written and written
    back right. In pipe mode the tag travels as a HEADER_BUILD_ID record. Either byte order.

OPTIONS
    --json    The report as JSON on stderr.

EXIT STATUS
    0 on success, undecided included; 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_tag_kernel(const Args& args) {
  CommonOptions common;
  std::vector<Option> options;
  add_common_options(options, common);
  RepairArgs parsed = parse_repair_args(args, options, common, "tag-kernel", kHelp);
  if (parsed.exit) return *parsed.exit;
  passes::TagKernel pass;
  transform::Pass* passes[] = {&pass};
  if (int rc = run_passes("tag-kernel", *parsed.in, parsed.out, passes); rc != kExitOk) return rc;
  print_report(pass.report(), common.json, common.verbose);
  return kExitOk;
}

}  // namespace pdfix::cli
