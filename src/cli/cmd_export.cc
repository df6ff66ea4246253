#include <algorithm>
#include <iostream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "cli/pass_options.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "io/output.h"
#include "passes/repair.h"
#include "profile/coverage.h"
#include "profile/folded.h"
#include "profile/htlhash.h"
#include "profile/otlp.h"
#include "profile/pprof.h"
#include "profile/stacks.h"
#include "profile/symbolizer.h"
#include "transform/open_session.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

struct Args {
  std::string in;
  std::string out;
  std::string format = "pprof";
  std::string event;
  std::string sysroot;
  std::vector<std::string> search;
  std::vector<std::string> labels = {"comm"};
  bool no_symbols = false;
  bool json = false;
  bool quiet = false;
};

// The run's summary: what was counted, how much of it has names, and by mapping (of the
// samples whose leaf lies in each) why not.
llvm::json::Object summary(const profile::Profile& p, profile::Locations& l,
                           const profile::Symbolizer* symbolizer, const std::string& format) {
  llvm::json::Array leaves;
  for (const profile::MappingCoverage& c : profile::leaf_coverage(p, l)) {
    llvm::json::Object o{{"samples", static_cast<int64_t>(c.samples)},
                         {"named", static_cast<int64_t>(c.named)}};
    if (c.mapping == 0) {
      o["file"] = "";
      o["problem"] = "no map covered the address";
    } else {
      const profile::Mapping& m = p.mappings[c.mapping - 1];
      o["file"] = format::escape_invalid_utf8(m.file);
      o["build_id"] = m.build_id;
      const std::string problem = symbolizer != nullptr ? symbolizer->problem(m) : "--no-symbols";
      if (c.named < c.samples && !problem.empty()) {
        o["problem"] = format::escape_invalid_utf8(problem);
      }
    }
    leaves.push_back(std::move(o));
  }
  return llvm::json::Object{{"format", format},
                            {"samples", static_cast<int64_t>(p.samples)},
                            {"samples_not_counted", static_cast<int64_t>(p.not_counted)},
                            {"stacks", static_cast<int64_t>(p.stacks.size())},
                            {"mappings", static_cast<int64_t>(p.mappings.size())},
                            {"locations", static_cast<int64_t>(l.all().size())},
                            {"locations_named", static_cast<int64_t>(l.named())},
                            {"leaves_by_mapping", std::move(leaves)}};
}

// The summary for people: the totals, then each mapping whose leaves stayed unnamed, most
// samples first, with why.
void say(const llvm::json::Object& s, std::ostream& out) {
  const auto n = [&](llvm::StringRef key) { return s.getInteger(key).value_or(0); };
  out << "pdfix export: " << n("samples") << " samples in " << n("stacks") << " stacks, "
      << n("mappings") << " mappings; " << n("locations_named") << " of " << n("locations")
      << " locations named\n";
  int shown = 0;
  for (const llvm::json::Value& v : *s.getArray("leaves_by_mapping")) {
    const llvm::json::Object& o = *v.getAsObject();
    const int64_t samples = o.getInteger("samples").value_or(0);
    const int64_t unnamed = samples - o.getInteger("named").value_or(0);
    if (unnamed == 0 || ++shown > 10) continue;
    const llvm::StringRef file = o.getString("file").value_or("");
    out << "  " << unnamed << " samples unnamed in " << (file.empty() ? "no map" : file.str())
        << ": " << o.getString("problem").value_or("no symbol covers their addresses").str()
        << "\n";
  }
}

// An error reading IN, naming it: the offset alone does not say which file.
absl::Status of_input(const Args& a, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(a.in == "-" ? "stdin" : a.in, ": ", s.message()));
}

// Whether IN's samples carry stack copies (--call-graph dwarf). A stream's events come as records:
// one is taken to, and what has none goes through the unwinder untouched.
bool user_stacks(io::Input& in) {
  if (in.mapped == nullptr) return true;
  auto session = transform::open_session(in);
  if (!session.ok()) return false;
  return std::any_of(
      session->attrs().begin(), session->attrs().end(),
      [](const format::EventAttr& a) { return (a.sample_type & format::kSampleStackUser) != 0; });
}

int run_export(const Args& a, const resolve::Host& host) {
  auto in = io::open_input(a.in);
  if (!in.ok()) return fail(of_input(a, in.status()));
  if (auto s = io::refuse_input_as_output(*in, a.out); !s.ok()) return fail(s);
  // OUT is made (a temporary file beside it) before any reading: a bad OUT costs nothing.
  auto out = io::Output::create(a.out, io::Output::Mode::kStreaming);
  if (!out.ok()) return fail(out.status());
  // The maps' build-ids proven as `inject --buildids` proves them: what names the binaries; JIT
  // code's maps naming the ELF files `inject-jit` makes of jitdumps and perf-PID.map files (into
  // the build-id cache, as `fix` does); and DWARF stacks unwound as `unwind` unwinds them, into
  // the callchains the profile reads.
  std::vector<std::unique_ptr<passes::RepairKind>> owned = passes::repair_kinds();
  std::vector<passes::RepairKind*> kinds;
  const bool stacks = user_stacks(*in);
  for (const auto& k : owned) {
    if (k->verb() == "inject" || k->verb() == "inject-jit" || (stacks && k->verb() == "unwind")) {
      kinds.push_back(k.get());
    }
  }
  const passes::Common common = passes::common_for(&*in, a.sysroot, a.search, host, kinds, nullptr);
  // A file without a build-id (Go) is named from when the resolver proves it by its inode.
  const auto asked = [&a](const char* label) {
    return std::find(a.labels.begin(), a.labels.end(), label) != a.labels.end();
  };
  profile::StackTap tap(
      [&common](const format::MmapRecord& m, const transform::Session& s) {
        if (!m.is_mmap2 || m.has_build_id()) return std::string();
        const resolve::MapQuery query{
            std::string(m.filename), m.misc, true, m.maj, m.min, m.ino, m.len, m.pid};
        return common.resolver->resolve(query, passes::recording_facts(s, common)).file;
      },
      {.comm = asked("comm"), .pid = asked("pid"), .tid = asked("tid")});
  Progress progress("export");
  auto chain = transform::run_into_tap(*in, chain_of(kinds, common), tap,
                                       {.progress = a.quiet ? nullptr : progress.callback()});
  if (!chain.ok()) return fail(of_input(a, chain.status()));
  const profile::Profile p = tap.take();
  // The binaries are found for --no-symbols too: OTLP names them by their file ids.
  profile::Symbolizer symbolizer(host, common.resolver->copy_places(common.recording_ended_at));
  if (!a.no_symbols) {
    for (const profile::Mapping& m : p.mappings) {
      if (m.kernel && m.file.starts_with("[kernel.kallsyms]")) {
        symbolizer.set_kernel(m);
        break;
      }
    }
  }
  profile::Locations locations(p, a.no_symbols ? nullptr : &symbolizer);
  uint64_t event = 0;
  if (!a.event.empty()) {
    while (event < p.events.size() && p.events[event].name != a.event) ++event;
    if (event == p.events.size()) {
      return fail(
          absl::InvalidArgumentError(absl::StrCat("--event ", a.event, ": not sampled in ", a.in)));
    }
  }
  std::string bytes;
  if (a.format == "folded") {
    bytes = profile::to_folded(p, locations, event);
  } else if (a.format == "otlp") {
    std::vector<std::string> htlhashes;
    absl::flat_hash_map<std::string, std::string> by_file;
    for (const profile::Mapping& m : p.mappings) {
      const std::string file = symbolizer.binary_file(m);
      auto [it, added] = by_file.try_emplace(file);
      if (added && !file.empty()) it->second = profile::htlhash_of(file).value_or("");
      htlhashes.push_back(it->second);
    }
    auto otlp = profile::to_otlp(p, locations, htlhashes);
    if (!otlp.ok()) return fail(otlp.status());
    bytes = *std::move(otlp);
  } else {
    auto pprof = profile::to_pprof(p, locations);
    if (!pprof.ok()) return fail(pprof.status());
    bytes = *std::move(pprof);
  }
  if (auto s = (*out)->write({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
      !s.ok()) {
    return fail(s);
  }
  if (auto s = (*out)->commit(); !s.ok()) return fail(s);
  llvm::json::Object said = summary(p, locations, a.no_symbols ? nullptr : &symbolizer, a.format);
  if (a.json) {
    print_json(std::move(said), json_stream(a.out));
  } else if (!a.quiet) {
    say(said, std::cerr);
  }
  return p.samples == 0 ? kExitIncomplete : kExitOk;
}

}  // namespace

Verb add_export(CLI::App& app, const resolve::Host& host) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "export",
      {"pdfix export", "a recording's samples as a profile: pprof, OpenTelemetry or folded",
       "pdfix export [--format pprof|otlp|folded] [--event NAME] [--labels LIST] [--no-symbols] "
       "[--sysroot DIR] [--search DIR]... [--json] [-q] IN OUT",
       R"(Writes the samples of IN as a profile that profiling tools read: pprof's profile.proto,
gzip-compressed (go tool pprof, Pyroscope, Parca); OpenTelemetry profiles, an OTLP
ExportProfilesServiceRequest (opentelemetry-proto v1.11.0, profiles/v1development), the body of
an OTLP/HTTP POST /v1development/profiles; or folded stacks, one line per stack,
`comm;root;...;leaf count` (flamegraph.pl, inferno, speedscope).

Each sample's callchain (or its ip, without one; a --call-graph dwarf sample unwound as
`pdfix unwind` unwinds it) is resolved to the maps that covered its addresses when it was
taken, with records in perf's time order, and its frames named by
LLVM's symbolizer from the binaries the maps' build-ids prove (found as `pdfix fix` finds
them: this host's files, --sysroot, --search roots, the build-id cache), their debug files
preferred: functions, source lines and inline frames, innermost first. A map without a
proven build-id, or whose binary is not here, keeps its addresses and file name: a wrong
name is worse than none. A file with no build-id of its own (a Go program) is named from
when it is proven by device and inode on the recording's host, in its boot. JIT code is named from its jitdump or /tmp/perf-PID.map, made an
ELF file in the build-id cache as `pdfix fix` makes it. Kernel frames, modules' too, are named from the kallsyms of the
recording's kernel: this host's when it runs that kernel, else the build-id cache's copy.

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
       exit_status({{kExitIncomplete, "IN holds no sample of a sampled event"}})});
  cmd->add_option("IN", a->in, "The recording ('-': stdin).")->required();
  cmd->add_option("OUT", a->out, "The profile to write ('-': stdout).")->required();
  cmd->add_option("-f,--format", a->format, "pprof (default), otlp or folded.")
      ->check(CLI::IsMember({"pprof", "otlp", "folded"}))
      ->type_name("FORMAT");
  cmd->add_option("--event", a->event, "folded: the event whose samples are written.")
      ->type_name("NAME");
  cmd->add_option("--labels", a->labels,
                  "What samples are told apart by, comma-separated: comm (the default), pid, tid; "
                  "or none.")
      ->delimiter(',')
      ->check(CLI::IsMember({"comm", "pid", "tid", "none"}))
      ->type_name("LIST");
  cmd->add_flag("--no-symbols", a->no_symbols,
                "Addresses, mappings and build-ids only: for services that symbolize themselves.");
  cmd->add_option("--sysroot", a->sysroot,
                  "A copy of the recording host's root: binaries are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  add_search_option(*cmd, a->search);
  cmd->add_flag("--json", a->json,
                "The summary as one JSON object on stdout (stderr when OUT is '-').");
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a, &host] { return run_export(*a, host); }};
}

}  // namespace pdfix::cli
