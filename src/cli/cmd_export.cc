// `pdfix export`: a recording's samples as a profile (cli/export_run.h).
#include <algorithm>
#include <iostream>

#include "cli/export_run.h"
#include "cli/pass_options.h"
#include "cli/verb.h"
#include "llvm/Support/JSON.h"

namespace pdfix::cli {
namespace {

struct Args {
  ExportArgs run;
  std::vector<std::string> labels = {"comm"};
  bool json = false;
};

int run(const Args& args, const resolve::Host& host) {
  ExportArgs a = args.run;
  const auto asked = [&args](const char* label) {
    return std::find(args.labels.begin(), args.labels.end(), label) != args.labels.end();
  };
  a.labels = {.comm = asked("comm"), .pid = asked("pid"), .tid = asked("tid")};
  llvm::json::Object said;
  const int status = run_export(a, host, said);
  if (args.json) {
    print_json(std::move(said), json_stream(a.out));
  } else if (!a.quiet && status != kExitError) {
    say_export(said, std::cerr);
  }
  return status;
}

}  // namespace

Verb add_export(CLI::App& app, const resolve::Host& host) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "export",
      {"pdfix export", "a recording's samples as a profile: pprof, OpenTelemetry or folded",
       "pdfix export [--format pprof|otlp|folded] [--event NAME] [--labels LIST] [--no-symbols] "
       "[--strict] [--sysroot DIR] [--search DIR]... [--buildid-dir DIR] [--kallsyms FILE] "
       "[--json] "
       "[-q] IN OUT",
       R"(Writes the samples of IN as a profile that profiling tools read: pprof's profile.proto,
gzip-compressed (go tool pprof, Pyroscope, Parca); OpenTelemetry profiles, an OTLP
ExportProfilesServiceRequest (opentelemetry-proto v1.11.0, profiles/v1development), the body of
an OTLP/HTTP POST /v1development/profiles; or folded stacks, one line per stack,
`comm;root;...;leaf count` (flamegraph.pl, inferno, speedscope).

Each sample's callchain (or its ip, without one; a --call-graph dwarf sample unwound as
`pdfix unwind` unwinds it) is resolved to the maps that covered its addresses when it was
taken, with records in perf's time order, and its frames named by
LLVM's symbolizer from the binaries the maps' build-ids prove (found as `pdfix fix` finds
them: this host's files, --sysroot, --search roots, the build-id cache or --buildid-dir: an
unpacked bundle's DIR/.debug), their debug files
preferred: functions, source lines and inline frames, innermost first. A map without a
proven build-id, or whose binary is not here, keeps its addresses and file name: a wrong
name is worse than none. A file with no build-id of its own (a Go program) is named from
when it is proven by device and inode on the recording's host, in its boot. JIT code is named from its jitdump or /tmp/perf-PID.map, made an
ELF file in the build-id cache as `pdfix fix` makes it. Kernel frames, modules' too, are named from the kallsyms of the
recording's kernel: this host's when it runs that kernel, else the build-id cache's copy,
else the file --kallsyms gives (a copy of the recording host's /proc/kallsyms, read as root
there; taken on the user's word: no build-id proves it).

Samples are counted by event, stack and labels: by default the command of each sample's
thread (comm); --labels comm,pid,tid adds the process and thread ids, --labels none counts by
stack alone.

pprof: one sample type per event (perf's name, counted in samples; cpu-clock and
task-clock also as NAME-time in nanoseconds), the first the default; the labels `comm`, `pid`
and `tid`; each mapping with its build-id. otlp: one profile per such sample type, one
dictionary; thread.name, process.pid and thread.id on samples, process.executable.build_id.gnu
(and .htlhash where the binary is here to hash) on mappings. folded: the samples of one event
(--event, default the first), each line led by its labels as stackcollapse-perf.pl writes them
(comm-pid/tid).

IN may be '-' for stdin, OUT '-' for stdout. OUT appears only complete.)",
       exit_status({{kExitIncomplete,
                     "IN holds no sample of a sampled event; with --strict, the binary (or "
                     "kallsyms) of a sampled frame was not found or not read, so its frames stay "
                     "unnamed (the profile is written all the same)"}})});
  cmd->add_option("IN", a->run.in, "The recording ('-': stdin).")->required();
  cmd->add_option("OUT", a->run.out, "The profile to write ('-': stdout).")->required();
  cmd->add_option("-f,--format", a->run.format, "pprof (default), otlp or folded.")
      ->check(CLI::IsMember({"pprof", "otlp", "folded"}))
      ->type_name("FORMAT");
  cmd->add_option("--event", a->run.event, "folded: the event whose samples are written.")
      ->type_name("NAME");
  cmd->add_option("--labels", a->labels,
                  "What samples are told apart by, comma-separated: comm (the default), pid, tid; "
                  "or none.")
      ->delimiter(',')
      ->check(CLI::IsMember({"comm", "pid", "tid", "none"}))
      ->type_name("LIST");
  cmd->add_flag("--no-symbols", a->run.no_symbols,
                "Addresses, mappings and build-ids only: for services that symbolize themselves.");
  cmd->add_flag("--strict", a->run.strict,
                "Exit 3 when a sampled binary, or the kernel's kallsyms, was not found or not "
                "read: for scripts that must not keep a profile with frames it could name.");
  cmd->add_option("--sysroot", a->run.sysroot,
                  "A copy of the recording host's root: binaries are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  add_search_option(*cmd, a->run.search);
  cmd->add_option("--buildid-dir", a->run.buildid_dir,
                  "perf's build-id cache (default: $PERF_BUILDID_DIR or ~/.debug): an unpacked "
                  "bundle's DIR/.debug names its recording as the recording host would.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  cmd->add_option("--kallsyms", a->run.kallsyms,
                  "The recording's kernel's kallsyms (a copy of its host's /proc/kallsyms), for "
                  "kernel frames where neither this host nor a build-id cache has it.")
      ->check(CLI::ExistingFile)
      ->type_name("FILE");
  cmd->add_flag("--json", a->json,
                "The summary as one JSON object on stdout (stderr when OUT is '-').");
  add_quiet_flag(*cmd, a->run.quiet);
  return {cmd, [a, &host] { return run(*a, host); }};
}

}  // namespace pdfix::cli
