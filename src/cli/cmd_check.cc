#include <iostream>

#include "cli/pass_options.h"
#include "cli/verb.h"
#include "inspect/check.h"
#include "io/input.h"

namespace pdfix::cli {

Verb add_check(CLI::App& app, const resolve::Host& host) {
  struct Args {
    std::string in;
    std::string sysroot;
    std::vector<std::string> search;
    bool json = false;
    bool quiet = false;
    // The command line fills in the kinds' configs, as it does for `fix`.
    std::vector<std::unique_ptr<passes::RepairKind>> kinds = passes::repair_kinds();
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "check",
      {"pdfix check",
       "find what is wrong in a recording, and which pass repairs it; changes nothing",
       "pdfix check [--json] [OPTIONS] IN",
       R"(Reads IN once, runs every pass of `pdfix fix` over it without writing anything, and prints
one finding per line: its file offset and record, what is wrong and the pass that repairs it
(or that none can). Notes alike on one file are told once, with a count.

Errors make perf show wrong data or lose some: a build-id that maps of different files share
or that the evidence contradicts, a module map that runs past its module, the kernel's
build-id table entry filed under another name or behind another kernel-mode entry, a table
with perf 6.12.0's entry sizes, bytes appended after the last record, a record cut off.
Notes: files that samples hit whose maps carry no build-id (with the id fix would add, or
none when nothing proves one), table entries fix would add, zstd in a stream, record types and
attr sizes that perf 6.1 and older refuse.

What check finds depends on the evidence the passes are given: give it the options you give
`pdfix fix` (--sysroot, --modules-dir, --proc-modules, ...), and check on fix's output reports
no error that fix could repair. IN may be '-' for stdin.

The last line and the exit status give the verdict: ready to archive (0), pdfix fix repairs
what was found (1), or something stays after fix (3). Notes on what older perf versions
refuse do not count against it (see pdfix compat). -q prints nothing: the status tells.)",
       exit_status({{kExitFixable,
                     "pdfix fix would repair what was found (and leave nothing "
                     "unrecoverable)."},
                    {kExitIncomplete,
                     "something stays wrong or unanalysable after pdfix fix: an error no pass "
                     "repairs, or a file that samples hit whose build-id fix cannot prove."}})});
  cmd->add_option("IN", a->in, "The recording to read ('-': stdin).")->required();
  cmd->add_option("--sysroot", a->sysroot,
                  "A copy of the recording host's root: files and modules are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  add_search_option(*cmd, a->search);
  cmd->add_flag("--json", a->json,
                "One JSON object on stdout: {errors, notes, findings: [{severity, file, offset, "
                "record, what, fixed_by, count, unrecoverable}], verdict}.");
  add_quiet_flag(*cmd, a->quiet);
  CliOptions options(*cmd);
  for (const auto& k : a->kinds) k->declare(options);
  return {cmd, [a, &host] {
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            std::vector<passes::RepairKind*> kinds;
            std::vector<std::string> fixers;
            for (const auto& k : a->kinds) {
              // What fix does only when asked (unwinding) is no repair a recording lacks.
              if (!k->fix_switch().empty()) continue;
              kinds.push_back(k.get());
              const std::string sw = k->required_switch();
              fixers.push_back(sw.empty() ? k->verb() : k->verb() + " " + sw);
            }
            const passes::Common common =
                passes::common_for(&*in, a->sysroot, a->search, host, kinds);
            auto report = inspect::check(*in, chain_of(kinds, common)(), fixers);
            if (!report.ok()) return fail(report.status());
            if (a->json) {
              inspect::print_check_json(*report, std::cout);
            } else if (!a->quiet) {
              inspect::print_check_text(*report, std::cout);
            }
            switch (report->verdict()) {
              case inspect::CheckReport::Verdict::kFixable:
                return kExitFixable;
              case inspect::CheckReport::Verdict::kUnrecoverable:
                return kExitIncomplete;
              case inspect::CheckReport::Verdict::kReady:
                break;
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
