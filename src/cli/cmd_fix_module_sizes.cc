#include <iostream>

#include "cli/commands.h"
#include "cli/pass_options.h"
#include "cli/summary.h"
#include "passes/fix_module_sizes.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix fix-module-sizes - give kernel-module maps the extent the modules really had

SYNOPSIS
    pdfix fix-module-sizes [OPTIONS] IN OUT

DESCRIPTION
    perf before 6.2 (commit 9ad4652b) let the last module's map run to the top of the address
    space, and since Linux 6.4 the size in /proc/modules covers all of a module's memory, so a
    map can overlap the next module. This verb judges every kernel-module map (kernel or guest
    kernel cpumode, the kernel image excepted) and repairs the ones that wrap past 2^64, end past
    the architecture's module area (x86_64, i386/i686, arm, s390x; from the ARCH feature),
    overlap the next module or the kernel image, or are absurdly large (2 GiB or more).

    The new length comes from the best evidence at hand, and the report says which:
      1. --proc-modules: the recording host's /proc/modules. Exact, so it also corrects maps
         that looked sane: each named module ends at address + size (on s390, where maps start
         at .text, len = address + size - start). A listing that does not place the map inside
         the module is of another boot and is not used.
      2. the module's ELF file (.ko, .ko.gz, .ko.xz, .ko.zst), by the map's path under --sysroot
         or by module name under --modules-dir or the sysroot's /lib/modules/<osrelease>: its
         allocated sections laid out as the kernel loads them. Not used if the recording names
         another build-id for the module.
      3. the next module's start (or the kernel image's), clamped to the module area's end.
    Then no module map is left overlapping the next one. Maps judged wrong with no evidence are
    left as they were and listed.

    Only the len field of changed records is written; everything else stays byte for byte, in
    file and pipe mode, either byte order, and zstd-compressed data (re-compressed when a map
    inside it changes). IN and OUT may be '-' for stdin and stdout.

OPTIONS
    --proc-modules FILE    A copy of /proc/modules from the recording host, at recording time.
    --sysroot DIR          A copy of the recording host's root (modules found by their path).
    --modules-dir DIR      A directory searched recursively for modules by name.
    --json                 The report as JSON on stderr.

EXIT STATUS
    0 on success, "nothing to fix" included; 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_fix_module_sizes(const Args& args) {
  CommonOptions common;
  passes::FixModuleSizesConfig config;
  std::vector<Option> options;
  add_common_options(options, common);
  add_module_size_options(options, config);
  RepairArgs parsed = parse_repair_args(args, options, common, "fix-module-sizes", kHelp);
  if (parsed.exit) return *parsed.exit;
  finish_module_size_config(config, common);
  passes::FixModuleSizes pass(std::move(config));
  transform::Pass* passes[] = {&pass};
  const int rc = run_passes("fix-module-sizes", *parsed.in, parsed.out, passes);
  if (rc != kExitOk) return rc;
  print_report(pass.report(), common.json, common.verbose);
  return kExitOk;
}

}  // namespace pdfix::cli
