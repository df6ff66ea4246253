#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/pass_options.h"
#include "cli/summary.h"
#include "inspect/buildid_list.h"
#include "io/input.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix buildid-list - the build-id of every DSO a recording names

SYNOPSIS
    pdfix buildid-list [--hits] [--json] IN

DESCRIPTION
    Prints one line per DSO, the build-id padded to 40 columns and then the DSO's name, exactly
    as 'perf buildid-list' does, and by perf's rules: a file with a build-id table lists the
    table; a stream (HEADER_BUILD_ID records and MMAP2 records with ids) or a file without a
    table lists the DSOs that sample addresses fall in, with an empty id where nothing gives one.
    One line per DSO and machine; a later id for a DSO replaces an earlier one, as in perf.

    IN may be '-' for stdin.

OPTIONS
    --hits    Only DSOs that samples hit: the sample address and, unlike perf 6.1, every user
              and kernel address of the callchain. (Files with AUX area traces list all, as
              perf does: the trace is not decoded.)
    --json    A JSON array of {build_id, name, machine} on stdout.

EXIT STATUS
    0 on success, 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_buildid_list(const Args& args) {
  bool help = false, hits = false, json = false;
  auto pos =
      parse_args(args, {switch_option("--help", "-h", help), switch_option("--hits", "-H", hits),
                        switch_option("--json", "", json)});
  if (!pos.ok()) return usage_error(std::string(pos.status().message()), "buildid-list");
  if (help) {
    std::cout << kHelp;
    return kExitOk;
  }
  if (pos->size() != 1) return usage_error("buildid-list takes IN", "buildid-list");
  auto in = io::open_input((*pos)[0]);
  if (!in.ok()) return fail(in.status());
  auto dsos = inspect::list_build_ids(*in, {.hits = hits});
  if (!dsos.ok()) return fail(dsos.status());
  if (json) {
    llvm::json::Array out;
    for (const auto& d : *dsos) {
      out.push_back(
          llvm::json::Object{{"build_id", d.build_id}, {"name", d.name}, {"machine", d.machine}});
    }
    print_json(std::move(out), std::cout);
    return kExitOk;
  }
  for (const auto& d : *dsos) std::printf("%-40s %s\n", d.build_id.c_str(), d.name.c_str());
  return kExitOk;
}

}  // namespace pdfix::cli
