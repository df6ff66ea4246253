// The repair verbs: one per pass (src/passes/registry.cc lists them), and `fix`, the chain of all
// of them. Each pass's options, help and report come from its RepairKind; nothing here is written
// for one pass.
#include <algorithm>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/fix_many.h"
#include "cli/fix_run.h"
#include "cli/keep.h"
#include "cli/man_page.h"
#include "cli/pass_options.h"
#include "cli/verb.h"
#include "passes/repair.h"

namespace pdfix::cli {
namespace {

constexpr const char* kShapes = R"(

Works on file- and pipe-mode input, either byte order, and zstd-compressed data (re-compressed
when a record inside it changes). IN and OUT may be '-' for stdin and stdout. A directory
recording (perf record --threads: `data` and data.N files) is read whole and written back as a
directory, or as one perf.data with --single-file; its `data` file alone is refused.)";

// IN and OUT: a repair verb's positional arguments.
void add_in_out(CLI::App& cmd, FixArgs& a) {
  cmd.add_option("IN", a.in, "The recording to read ('-': stdin).")->required();
  cmd.add_option("OUT", a.out, "Where to write the result ('-': stdout).")->required();
}

// A verb's run: its reports as text, or as one JSON object.
int run(const std::string& verb, const std::vector<passes::RepairKind*>& kinds, const FixArgs& a,
        const resolve::Host& host, bool single) {
  if (!a.json) return run_fix(verb, kinds, a, host, nullptr, single);
  llvm::json::Object reports;
  const int status = run_fix(verb, kinds, a, host, &reports, single);
  if (status != kExitError) print_json(std::move(reports), json_stream(a.out));
  return status;
}

Verb add_single(CLI::App& app, passes::RepairKind& kind, const resolve::Host& host) {
  const std::string verb = kind.verb();
  const std::string sw = kind.required_switch();
  struct Args : FixArgs {
    bool required_switch = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, verb,
      {"pdfix " + verb + (sw.empty() ? "" : " " + sw), kind.summary(),
       absl::StrCat("pdfix ", verb, sw.empty() ? "" : " ", sw, " [OPTIONS] IN OUT"),
       absl::StrCat(kind.description(), kShapes),
       kind.incomplete_exit().empty() ? exit_status()
                                      : exit_status({{kExitIncomplete, kind.incomplete_exit()}})});
  if (!sw.empty()) cmd->add_flag(sw, args->required_switch, "What to do (required).")->required();
  add_in_out(*cmd, *args);
  add_fix_common(*cmd, *args);
  CliOptions options(*cmd);
  kind.declare(options);
  if (const std::string o = kind.required_option(); !o.empty()) cmd->get_option(o)->required();
  return {cmd, [verb, &kind, args, &host] { return run(verb, {&kind}, *args, host, true); }};
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
  CLI::App* cmd = add_command(
      app, "fix",
      {"pdfix fix", "every repair pass in one read: the step before a recording is archived",
       "pdfix fix [OPTIONS] IN OUT\npdfix fix [OPTIONS] IN... OUTDIR",
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
  auto options = add_fix_options(*cmd, kinds);
  // IN... OUT as one list: CLI11 fills a list greedily and leaves no trailing positional.
  auto paths = std::make_shared<std::vector<std::string>>();
  cmd->add_option("IN OUT", *paths,
                  "The recording to read ('-': stdin), then where to write the result ('-': "
                  "stdout). Several recordings, each a file, are fixed into OUT, a directory, each "
                  "under its own name, in one run.")
      ->required()
      ->expected(2, -1);
  return {cmd, [options, paths, &host] {
            FixArgs args = options->args;
            args.out = paths->back();
            if (auto s = check_fix_args(args); !s.ok()) return fail(s);
            if (paths->size() > 2) {
              return fix_many(options->chosen(), args, {paths->begin(), paths->end() - 1}, host);
            }
            args.in = paths->front();
            return run("fix", options->chosen(), args, host, false);
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
