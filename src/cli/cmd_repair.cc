// The repair verbs: one per pass (src/passes/registry.cc lists them), and `fix`, the chain of all
// of them. Each pass's options, help and report come from its RepairKind; nothing here is written
// for one pass.
#include <algorithm>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/keep.h"
#include "cli/man_page.h"
#include "cli/pass_options.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "io/input.h"
#include "passes/repair.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

constexpr const char* kShapes = R"(

Works on file- and pipe-mode input, either byte order, and zstd-compressed data (re-compressed
when a record inside it changes). IN and OUT may be '-' for stdin and stdout. A directory
recording (perf record --threads: `data` and data.N files) is read whole and written back as a
directory, or as one perf.data with --single-file; its `data` file alone is refused.)";

// What every repair verb is given on its command line besides the passes' own options.
struct Args {
  std::string in;
  std::string out;
  std::string sysroot;
  std::vector<std::string> search;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
  bool strict = false;     // fix --archive/--store only
  bool no_debug = false;   // fix --archive/--store only
  bool with_code = false;  // fix --archive only
  bool slim = false;       // fix --store only
  bool required_switch = false;
  OutputArgs output;
  // fix only: keep the binaries OUT names.
  std::string archive;
  bool store = false;
};

void add_common(CLI::App& cmd, Args& a) {
  cmd.add_option("IN", a.in, "The recording to read ('-': stdin).")->required();
  cmd.add_option("OUT", a.out, "Where to write the result ('-': stdout).")->required();
  cmd.add_option("--sysroot", a.sysroot,
                 "A copy of the recording host's root: files and modules are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  add_search_option(cmd, a.search);
  cmd.add_flag("--json", a.json,
               "The summary as one JSON object on stdout (on stderr when OUT is '-').");
  cmd.add_flag("-v,--verbose", a.verbose, "List every map in the summary, with its evidence.");
  add_quiet_flag(cmd, a.quiet);
  add_output_options(cmd, a.output);
}

int run(const std::string& verb, const std::vector<passes::RepairKind*>& kinds, const Args& a,
        const resolve::Host& host) {
  auto in = io::open_input(a.in);
  if (!in.ok()) return fail(in.status());
  if (!a.archive.empty()) {
    if (auto s = io::refuse_input_as_output(*in, a.archive); !s.ok()) return fail(s);
  }
  const passes::Common common = passes::common_for(&*in, a.sysroot, a.search, host, kinds);
  const transform::MakeChain make = chain_of(kinds, common);
  Summary say(a.quiet);
  Progress progress(verb);
  auto chain = transform::run_pipeline(*in, a.out, make,
                                       {.progress = a.quiet ? nullptr : progress.callback(),
                                        .single_file = a.output.single_file,
                                        .zstd_level = a.output.zstd_level});
  if (!chain.ok()) return fail(chain.status());
  std::vector<const passes::Repair*> repairs;
  for (const auto& pass : *chain) {
    repairs.push_back(dynamic_cast<const passes::Repair*>(pass.get()));
  }
  std::optional<KeepTarget> target;
  if (!a.archive.empty()) target = KeepTarget{.bundle = a.archive};
  if (a.store) target = KeepTarget{.cache = default_cache(host)};
  KeepArgs keep_args{.sysroot = a.sysroot,
                     .search = a.search,
                     .verbose = a.verbose,
                     .quiet = a.quiet,
                     .strict = a.strict,
                     .no_debug = a.no_debug,
                     .with_code = a.with_code,
                     .slim = a.slim};
  for (const passes::Repair* r : repairs) {
    if (const std::string cache = r->cache_written(); !cache.empty()) {
      keep_args.more_caches.push_back(cache);
    }
  }
  const int passes_status =
      std::any_of(repairs.begin(), repairs.end(), [](const auto* r) { return r->incomplete(); })
          ? kExitIncomplete
          : kExitOk;
  if (!a.json) {
    for (const passes::Repair* r : repairs) r->report_text(say.out(), a.verbose);
    const int kept = target ? keep(a.out, *target, keep_args, host, &common, nullptr) : kExitOk;
    return kept != kExitOk ? kept : passes_status;
  }
  std::ostream& json = json_stream(a.out);
  if (repairs.size() == 1) {
    print_json(repairs.front()->report_json(), json);
    return passes_status;
  }
  llvm::json::Object reports;
  for (size_t i = 0; i < repairs.size(); ++i) {
    reports[kinds[i]->report_key()] = repairs[i]->report_json();
  }
  int status = passes_status;
  if (target) {
    llvm::json::Object kept;
    const int kept_status = keep(a.out, *target, keep_args, host, &common, &kept);
    if (kept_status == kExitError) return kept_status;
    if (kept_status != kExitOk) status = kept_status;
    reports[a.store ? "store" : "archive"] = std::move(kept);
  }
  print_json(std::move(reports), json);
  return status;
}

Verb add_single(CLI::App& app, passes::RepairKind& kind, const resolve::Host& host) {
  const std::string verb = kind.verb();
  const std::string sw = kind.required_switch();
  auto args = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, verb,
      {"pdfix " + verb + (sw.empty() ? "" : " " + sw), kind.summary(),
       absl::StrCat("pdfix ", verb, sw.empty() ? "" : " ", sw, " [OPTIONS] IN OUT"),
       absl::StrCat(kind.description(), kShapes),
       kind.incomplete_exit().empty() ? exit_status()
                                      : exit_status({{kExitIncomplete, kind.incomplete_exit()}})});
  if (!sw.empty()) {
    cmd->add_flag(sw, args->required_switch, "What to do (required).")->required();
  }
  add_common(*cmd, *args);
  CliOptions options(*cmd);
  kind.declare(options);
  if (const std::string o = kind.required_option(); !o.empty()) cmd->get_option(o)->required();
  return {cmd, [verb, &kind, args, &host] { return run(verb, {&kind}, *args, host); }};
}

// Each pass's own word on when it is done but incomplete, as fix says it.
std::string incomplete_exits(const std::vector<passes::RepairKind*>& kinds) {
  std::string out;
  for (const passes::RepairKind* k : kinds) {
    const std::string why = k->incomplete_exit();
    if (why.empty()) continue;
    const std::string sw = k->fix_switch();
    absl::StrAppend(&out, " ", k->verb(), sw.empty() ? "" : absl::StrCat(" (", sw, ")"), ": ", why);
  }
  return out;
}

Verb add_fix(CLI::App& app, const std::vector<passes::RepairKind*>& kinds,
             const resolve::Host& host) {
  std::string steps;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const std::string sw = kinds[i]->required_switch();
    const std::string asked = kinds[i]->fix_switch();
    const std::string skip = kinds[i]->fix_skip_switch();
    steps += filled(
        absl::StrCat("  ", i + 1, ". ", kinds[i]->verb(), sw.empty() ? "" : " ", sw, ":"),
        absl::StrCat(kinds[i]->summary(), asked.empty() ? "" : absl::StrCat(" (with ", asked, ")"),
                     skip.empty() ? "" : absl::StrCat(" (not with ", skip, ")")),
        6, 96);
  }
  auto args = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "fix",
      {"pdfix fix", "every repair pass in one read: the step before a recording is archived",
       "pdfix fix [OPTIONS] IN OUT",
       absl::StrCat("Runs, in one read of IN:\n", steps,
                    "In this order each pass sees what the one before did. Running fix on its own "
                    "output\nchanges nothing. See each verb's --help for the details and the trust "
                    "rules; their\noptions apply here. --json gives one object with a member per "
                    "pass.\n\nWith --archive BUNDLE or --store, the binaries OUT names are kept "
                    "afterwards, as\n`pdfix archive OUT BUNDLE` or `pdfix store OUT` would: the "
                    "whole pre-archive step.",
                    kShapes),
       exit_status(
           {{kExitIncomplete, absl::StrCat("(with --archive or --store) ", kStrictExit,
                                           " Also when a pass could not do all it was asked:",
                                           incomplete_exits(kinds))}})});
  add_common(*cmd, *args);
  auto* archive = cmd->add_option("--archive", args->archive,
                                  "Then bundle OUT with the binaries it names, as `pdfix archive "
                                  "OUT BUNDLE` does.")
                      ->type_name("BUNDLE");
  auto* store = cmd->add_flag("--store", args->store,
                              "Then store the binaries OUT names in perf's build-id cache, as "
                              "`pdfix store OUT` does.")
                    ->excludes(archive);
  cmd->add_flag("--strict", args->strict,
                "With --archive or --store: exit 3 when a binary that samples hit will not "
                "resolve from what was kept.");
  add_no_debug_flag(*cmd, args->no_debug);
  add_with_code_flag(*cmd, args->with_code)->needs(archive);
  add_slim_flag(*cmd, args->slim)->needs(store);
  // Passes fix runs only when asked: their switches, each set or not.
  auto asked = std::make_shared<std::map<passes::RepairKind*, bool>>();
  for (passes::RepairKind* k : kinds) {
    if (const std::string sw = k->fix_switch(); !sw.empty()) {
      cmd->add_flag(sw, (*asked)[k],
                    absl::StrCat("Also ", k->summary(), " (pdfix ", k->verb(), ")."));
    }
  }
  auto skipped = std::make_shared<std::map<passes::RepairKind*, bool>>();
  for (passes::RepairKind* k : kinds) {
    if (const std::string sw = k->fix_skip_switch(); !sw.empty()) {
      cmd->add_flag(sw, (*skipped)[k],
                    absl::StrCat("Do not ", k->summary(), " (pdfix ", k->verb(), ")."));
    }
  }
  CliOptions options(*cmd);
  for (passes::RepairKind* k : kinds) k->declare(options);
  return {cmd, [kinds, args, asked, skipped, &host] {
            if ((args->store || !args->archive.empty()) && args->out == "-") {
              return fail(absl::InvalidArgumentError(
                  "--archive and --store read OUT again: give OUT as a file, not '-'"));
            }
            if (args->store && default_cache(host).empty()) {
              return fail(absl::InvalidArgumentError("--store: no HOME and no PERF_BUILDID_DIR"));
            }
            std::vector<passes::RepairKind*> chosen;
            for (passes::RepairKind* k : kinds) {
              if (!k->fix_switch().empty() && !asked->at(k)) continue;
              if (!k->fix_skip_switch().empty() && skipped->at(k)) continue;
              chosen.push_back(k);
            }
            return run("fix", chosen, *args, host);
          }};
}

}  // namespace

std::vector<Verb> add_repairs(CLI::App& app, const resolve::Host& host, const std::string& only) {
  // The command line fills in the kinds' configs; the verbs' closures keep them alive. `fix` has
  // kinds of its own, so that its options are not the single verbs'.
  using Kinds = std::vector<std::unique_ptr<passes::RepairKind>>;
  auto for_verbs = std::make_shared<Kinds>(passes::repair_kinds());
  const bool one = only == "fix" || std::any_of(for_verbs->begin(), for_verbs->end(),
                                                [&](const auto& k) { return k->verb() == only; });
  std::vector<Verb> verbs;
  if (!one || only == "fix") {
    auto for_fix = std::make_shared<Kinds>(passes::repair_kinds());
    std::vector<passes::RepairKind*> chain;
    for (const auto& k : *for_fix) chain.push_back(k.get());
    verbs.push_back(add_fix(app, chain, host));
    verbs.back().run = [run = verbs.back().run, for_fix] { return run(); };
  }
  for (const auto& k : *for_verbs) {
    if (one && k->verb() != only) continue;
    verbs.push_back(add_single(app, *k, host));
    verbs.back().run = [run = verbs.back().run, for_verbs] { return run(); };
  }
  return verbs;
}

}  // namespace pdfix::cli
