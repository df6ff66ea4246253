#include <iostream>

#include "cli/commands.h"
#include "cli/pass_options.h"
#include "cli/summary.h"
#include "passes/inject_build_ids.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix inject --buildids - give every map record the build-id of what was mapped

SYNOPSIS
    pdfix inject --buildids [OPTIONS] IN OUT

DESCRIPTION
    Rewrites each MMAP and MMAP2 record of a file-backed mapping, the kernel's and its modules'
    included, as an MMAP2 that carries the build-id of the mapped file (misc bit MMAP_BUILD_ID,
    which perf reads since 5.12). Everything else in the record is kept: cpumode, the data bit,
    pid, tid, addresses, offset, file name and the sample_id trailer. Every injected id the
    build-id table lacks is added to it, so older readers see it too. Records that already carry
    an id, anonymous maps and files that cannot be identified for certain are left as they were.

    A build-id is taken, in this order of trust, from: --known-build-ids; the recording's own
    build-id table; the mapped file (under --sysroot if given, else on this machine, and then only
    if it is the same inode as the one mapped and was not modified after the recording ended);
    perf's build-id cache; for the kernel and its modules, the running kernel's notes, only when
    the recording is of this very boot (same release and the same KASLR _text address). A wrong
    build-id is worse than none: in doubt a map is left alone and the summary says why.

    Works on file- and pipe-mode input, either byte order, and zstd-compressed data (re-compressed
    on output). IN and OUT may be '-' for stdin and stdout.

OPTIONS
    --buildids                 The injection to perform (required).
    --known-build-ids LIST     PATH=ID pairs, comma-separated, or @FILE with one pair a line.
                               Use [kernel.kallsyms] for the kernel and [name] for a module.
    --sysroot DIR              A copy of the recording host's root; files are looked up there.
    --buildid-dir DIR          perf's build-id cache (default: ~/.debug when it exists).
    --json                     The summary as JSON on stderr.
    -v, --verbose              List every map in the summary, with where its id came from.

EXIT STATUS
    0 on success (maps left alone are not an error), 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_inject(const Args& args) {
  bool buildids = false;
  CommonOptions common;
  passes::InjectBuildIdsConfig config;
  std::vector<Option> options{switch_option("--buildids", "", buildids)};
  add_common_options(options, common);
  add_inject_options(options, config);
  RepairArgs parsed = parse_repair_args(args, options, common, "inject", kHelp);
  if (parsed.exit) return *parsed.exit;
  if (!buildids) return usage_error("say what to inject: --buildids", "inject");
  finish_inject_config(config, common, *parsed.in);
  passes::InjectBuildIds pass(std::move(config));
  transform::Pass* passes[] = {&pass};
  if (int rc = run_passes("inject", *parsed.in, parsed.out, passes); rc != kExitOk) return rc;
  print_report(pass.report(), common.json, common.verbose);
  return kExitOk;
}

}  // namespace pdfix::cli
