#include <iostream>

#include "cli/commands.h"
#include "cli/pass_options.h"
#include "cli/summary.h"
#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "passes/tag_kernel.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix fix - every repair pass in one go: the step before a recording is archived

SYNOPSIS
    pdfix fix [OPTIONS] IN OUT

DESCRIPTION
    Runs, in one read of IN:
      1. fix-module-sizes: kernel-module maps get the extent the modules really had;
      2. tag-kernel: the build-id table names the kernel "[kernel.kallsyms]", first, and the
         kernel map gets that id;
      3. inject --buildids: every map record carries the build-id of what was mapped, and the
         table lists every id injected.
    In this order each pass sees what the one before did: the kernel tag decides from module maps
    already repaired, and injection finds the kernel map already carrying the tagged id. Running
    fix on its own output changes nothing. See each verb's --help for the details and the trust
    rules; their options apply here.

    Works on file- and pipe-mode input, either byte order, and zstd-compressed data. IN and OUT
    may be '-' for stdin and stdout.

OPTIONS
    --sysroot DIR              A copy of the recording host's root (files and modules).
    --known-build-ids LIST     PATH=ID pairs, comma-separated, or @FILE with one pair a line.
    --buildid-dir DIR          perf's build-id cache (default: ~/.debug when it exists).
    --proc-modules FILE        The recording host's /proc/modules.
    --modules-dir DIR          A directory searched recursively for modules by name.
    --json                     One JSON object on stderr: module_sizes, tag_kernel, inject.
    -v, --verbose              List every map in the injection summary.

EXIT STATUS
    0 on success, 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_fix(const Args& args) {
  CommonOptions common;
  passes::InjectBuildIdsConfig inject_config;
  passes::FixModuleSizesConfig module_config;
  std::vector<Option> options;
  add_common_options(options, common);
  add_inject_options(options, inject_config);
  add_module_size_options(options, module_config);
  RepairArgs parsed = parse_repair_args(args, options, common, "fix", kHelp);
  if (parsed.exit) return *parsed.exit;
  finish_inject_config(inject_config, common, *parsed.in);
  finish_module_size_config(module_config, common);
  passes::FixModuleSizes module_sizes(std::move(module_config));
  passes::TagKernel tag_kernel;
  passes::InjectBuildIds inject(std::move(inject_config));
  transform::Pass* passes[] = {&module_sizes, &tag_kernel, &inject};
  if (int rc = run_passes("fix", *parsed.in, parsed.out, passes); rc != kExitOk) return rc;
  if (common.json) {
    print_json(llvm::json::Object{{"module_sizes", to_json(module_sizes.report())},
                                  {"tag_kernel", to_json(tag_kernel.report())},
                                  {"inject", to_json(inject.report())}},
               std::cerr);
  } else {
    print_text(module_sizes.report(), common.verbose, std::cerr);
    print_text(tag_kernel.report(), common.verbose, std::cerr);
    print_text(inject.report(), common.verbose, std::cerr);
  }
  return kExitOk;
}

}  // namespace pdfix::cli
