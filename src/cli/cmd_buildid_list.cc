#include <cstdio>
#include <iostream>

#include "cli/verb.h"
#include "format/utf8.h"
#include "inspect/buildid_list.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"

namespace pdfix::cli {

Verb add_buildid_list(CLI::App& app) {
  struct Args {
    std::string in;
    bool hits = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "buildid-list",
      {"pdfix buildid-list", "the build-id of every DSO a recording names",
       "pdfix buildid-list [--hits] [--json] IN",
       R"(Prints one line per DSO, the build-id padded to 40 columns and then the DSO's name, exactly
as 'perf buildid-list' does, and by perf's rules: a file with a build-id table lists the
table; a stream (HEADER_BUILD_ID records and MMAP2 records with ids) or a file without a
table lists the DSOs that sample addresses fall in, with an empty id where nothing gives one.
One line per DSO and machine; a later id for a DSO replaces an earlier one, as in perf.

IN may be '-' for stdin.)",
       exit_status()});
  cmd->add_option("IN", a->in, "The recording to read ('-': stdin).")->required();
  cmd->add_flag("-H,--hits", a->hits,
                "Only DSOs that samples hit: the sample address and, unlike perf 6.1, every user "
                "and kernel address of the callchain. (Files with AUX area traces list all, as "
                "perf does: the trace is not decoded.)");
  cmd->add_flag("--json", a->json, "A JSON array of {build_id, name, machine} on stdout.");
  return {cmd, [a] {
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            auto dsos = inspect::list_build_ids(*in, {.hits = a->hits});
            if (!dsos.ok()) return fail(dsos.status());
            if (a->json) {
              llvm::json::Array out;
              for (const auto& d : dsos->dsos) {
                out.push_back(llvm::json::Object{{"build_id", d.build_id},
                                                 {"name", format::escape_invalid_utf8(d.name)},
                                                 {"machine", d.machine}});
              }
              print_json(std::move(out), std::cout);
              return kExitOk;
            }
            for (const auto& d : dsos->dsos) {
              std::printf("%-40s %s\n", d.build_id.c_str(), d.name.c_str());
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
