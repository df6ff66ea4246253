#include <cstdlib>
#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "cli/keep.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "inspect/buildid_list.h"
#include "io/input.h"
#include "store/binaries.h"
#include "store/fetch.h"

namespace pdfix::cli {

namespace {

// What a fetch leaves the analysis host without, beyond what the servers sent.
struct Tally {
  std::map<std::string, int64_t> counts;  // by outcome
  int64_t asked = 0;                      // lookups that went to the servers
  int64_t not_there = 0;                  // anything but present, fetched or cached
};

Tally tally(const std::vector<store::Fetched>& fetched) {
  Tally t;
  for (const store::Fetched& f : fetched) {
    ++t.counts[f.outcome];
    if (f.asked) ++t.asked;
    if (f.outcome != "present" && f.outcome != "fetched" && f.outcome != "cached") ++t.not_there;
  }
  return t;
}

}  // namespace

Verb add_fetch(CLI::App& app, const resolve::Host& host) {
  struct Args {
    std::string in;
    std::string cache;
    std::string urls;
    bool debuginfo = false;
    bool hits = false;
    bool json = false;
    bool quiet = false;
    bool strict = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "fetch",
      {"pdfix fetch", "the binaries a recording names, from debuginfod servers",
       "pdfix fetch [--buildid-dir DIR] [--debuginfod URLS] [--debuginfo] [--hits] [--strict] "
       "[--json] IN",
       R"(On the host that analyses a recording: for every build-id IN names whose binary the
build-id cache lacks, asks debuginfod servers (elfutils' libdebuginfod) for the executable,
checks that what arrives has that build-id, and stores it in perf's layout, so that
`perf --buildid-dir DIR report -i IN` finds it. With --debuginfo the separate debug file
too (DIR/<path>/<id>/debug). A kernel is asked for its vmlinux (stored as
[kernel.kallsyms]/<id>/vmlinux; servers have no kallsyms). DSOs of guests are skipped.

Servers: --debuginfod, else $DEBUGINFOD_URLS (space-separated URLs). A directory of
bundles written by `pdfix archive` is served by `debuginfod -Z .tar.zst=zstdcat DIR`.

Each binary is: already there (in the build-id cache), fetched (sent by a server), cached
(libdebuginfod had it in its own client cache: no server was asked), missing (the servers
answered that they do not have it), unreachable (no server could be asked: connection
refused, name not resolved, timeout, HTTP 5xx) or failed (what arrived has another
build-id, or could not be stored). libdebuginfod remembers a miss for a while in its client
cache ($DEBUGINFOD_CACHE_PATH, default ~/.cache/debuginfod_client). Files that samples hit
but that no record names by build-id cannot be fetched; they are counted apart.

The summary goes to stderr; --json prints one object on stdout. IN may be '-' for stdin.)",
       exit_status({{kExitError,
                     "Also when no server could be asked at all (every lookup "
                     "unreachable), or none was given."},
                    {kExitIncomplete,
                     "with --strict, a binary stays missing, unreachable or failed, or a file that "
                     "samples hit has no build-id."}})});
  cmd->add_option("IN", a->in, "The recording ('-': stdin).")->required();
  cmd->add_option("--buildid-dir", a->cache,
                  "The build-id cache to fill (default: $PERF_BUILDID_DIR, else ~/.debug).")
      ->type_name("DIR");
  cmd->add_option("--debuginfod", a->urls,
                  "Space-separated server URLs (default: $DEBUGINFOD_URLS).")
      ->type_name("URLS");
  cmd->add_flag("--debuginfo", a->debuginfo, "Fetch the separate debug files too.");
  cmd->add_flag("--hits", a->hits, "Only the binaries that samples or callchains fall in.");
  cmd->add_flag("--strict", a->strict,
                "Exit 3 when anything stays missing, unreachable or failed.");
  cmd->add_flag("--json", a->json, "The result as one JSON object on stdout.");
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a, &host] {
            const std::string cache = a->cache.empty() ? default_cache(host) : a->cache;
            if (cache.empty()) {
              return fail(absl::InvalidArgumentError("no HOME: give --buildid-dir DIR"));
            }
            std::string urls = a->urls;
            if (const std::string env = host.debuginfod_urls(); urls.empty() && !env.empty()) {
              urls = env;
            }
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            auto dsos = inspect::list_build_ids(
                *in, {.hits = a->hits, .every_source = true, .count_samples = true});
            if (!dsos.ok()) return fail(dsos.status());
            auto named = store::find_binaries(*in, *dsos, host, {.prove = false});
            if (!named.ok()) return fail(named.status());
            Summary say(a->quiet);
            Progress progress("fetch");
            auto fetched = store::fetch_binaries(
                named->binaries, {.cache = cache,
                                  .client_cache = host.debuginfod_client_cache(),
                                  .urls = urls,
                                  .debuginfo = a->debuginfo,
                                  .progress = a->quiet ? nullptr : progress.callback()});
            if (!fetched.ok()) return fail(fetched.status());
            Tally t = tally(*fetched);
            uint64_t idless_samples = 0;
            for (const store::Binary& b : named->idless) idless_samples += b.samples;
            const double idless_share = named->samples == 0
                                            ? 0.0
                                            : 100.0 * static_cast<double>(idless_samples) /
                                                  static_cast<double>(named->samples);
            int status = kExitOk;
            if (t.asked > 0 && t.counts["unreachable"] == t.asked) {
              status = kExitError;
            } else if (a->strict && (t.not_there > 0 || !named->idless.empty())) {
              status = kExitIncomplete;
            }
            if (a->json) {
              llvm::json::Array rows;
              for (const store::Fetched& f : *fetched) {
                rows.push_back(llvm::json::Object{{"build_id", f.build_id},
                                                  {"name", format::escape_invalid_utf8(f.name)},
                                                  {"what", f.what},
                                                  {"outcome", f.outcome},
                                                  {"detail", f.detail}});
              }
              llvm::json::Array idless;
              for (const store::Binary& b : named->idless) {
                idless.push_back(llvm::json::Object{{"name", format::escape_invalid_utf8(b.name)},
                                                    {"samples", static_cast<int64_t>(b.samples)}});
              }
              llvm::json::Object totals;
              for (const auto& [k, v] : t.counts) totals[k] = v;
              print_json(llvm::json::Object{{"cache", cache},
                                            {"binaries", std::move(rows)},
                                            {"counts", std::move(totals)},
                                            {"samples", static_cast<int64_t>(named->samples)},
                                            {"without_build_id", std::move(idless)},
                                            {"without_build_id_share", idless_share}},
                         std::cout);
              return status;
            }
            std::ostream& os = say.out();
            os << absl::StrFormat(
                "fetch into %s: %d fetched, %d from libdebuginfod's cache, %d already there, %d "
                "missing, %d unreachable, %d failed\n",
                cache, t.counts["fetched"], t.counts["cached"], t.counts["present"],
                t.counts["missing"], t.counts["unreachable"], t.counts["failed"]);
            for (const store::Fetched& f : *fetched) {
              if (f.outcome == "present") continue;
              os << absl::StrFormat("  %-11s %-40s %s (%s)%s%s\n", f.outcome, f.build_id,
                                    format::escape_invalid_utf8(f.name), f.what,
                                    f.detail.empty() ? "" : ": ", f.detail);
            }
            if (!named->idless.empty()) {
              os << absl::StrFormat(
                  "  %d files that samples hit have no build-id in the recording (%.1f%% of "
                  "samples): debuginfod serves files by build-id, so nothing can fetch them; "
                  "run pdfix fix where it was recorded, and for a file with no GNU build-id of "
                  "its own (a Go program, by default) pdfix fix --archive there, which keeps it "
                  "by path\n",
                  named->idless.size(), idless_share);
            }
            if (status == kExitError) {
              os << "  no server could be asked: check --debuginfod or DEBUGINFOD_URLS\n";
            } else if (t.counts["missing"] > 0) {
              os << "  (missing binaries stay unresolved in reports: no server has them)\n";
            }
            return status;
          }};
}

}  // namespace pdfix::cli
