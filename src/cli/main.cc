#include <iostream>
#include <string>

#include "cli/commands.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix - repair and enrich perf.data recordings before they are archived

SYNOPSIS
    pdfix VERB [OPTIONS] ARGS...
    pdfix VERB --help

VERBS
    fix IN OUT         The pre-archive step: fix-module-sizes, tag-kernel and inject --buildids
                       in one read (their options apply).
    copy IN OUT        Read and write back unchanged (byte-identical): validates IN.
    info IN            Header, events, features and record counts (--json).
    dump IN            One line per record (--json for JSON Lines).
    inject --buildids IN OUT
                       Give every MMAP/MMAP2 the build-id of the mapped file, kernel and
                       modules included, and add the ids to the build-id table.
    fix-module-sizes IN OUT
                       Repair kernel-module maps whose length runs past the module area, wraps
                       or overlaps the next module (--proc-modules, --sysroot, --modules-dir).
    tag-kernel IN OUT  Name the kernel's build-id table entry [kernel.kallsyms], first, keeping
                       the path it was filed under; repair perf 6.12.0's entry sizes.
    buildid-list IN    'id path' for every DSO, like perf buildid-list (--hits, --json).

    IN and OUT may be '-' for stdin/stdout. Outputs are written to a temporary file and renamed
    when complete; the input is never written.

EXIT STATUS
    0 on success, 2 on bad usage or bad input, with one line on stderr naming the file offset
    and record concerned.
)";

}  // namespace

int fail(const absl::Status& status) {
  std::cerr << "pdfix: " << status.message() << "\n";
  return kExitError;
}

int usage_error(const std::string& message, const char* verb) {
  std::cerr << "pdfix " << verb << ": " << message << " (see 'pdfix " << verb << " --help')\n";
  return kExitError;
}

}  // namespace pdfix::cli

int main(int argc, char** argv) {
  using namespace pdfix::cli;
  if (argc < 2) {
    std::cerr << kHelp;
    return kExitError;
  }
  const std::string verb = argv[1];
  const Args args(argv + 2, argv + argc);
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::cout << kHelp;
    return kExitOk;
  }
  if (verb == "copy") return cmd_copy(args);
  if (verb == "info") return cmd_info(args);
  if (verb == "dump") return cmd_dump(args);
  if (verb == "inject") return cmd_inject(args);
  if (verb == "fix-module-sizes") return cmd_fix_module_sizes(args);
  if (verb == "tag-kernel") return cmd_tag_kernel(args);
  if (verb == "fix") return cmd_fix(args);
  if (verb == "buildid-list") return cmd_buildid_list(args);
  std::cerr << "pdfix: unknown verb '" << verb << "' (see 'pdfix --help')\n";
  return kExitError;
}
