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
#include "llvm/Support/JSON.h"
#include "store/binaries.h"
#include "store/fetch.h"

namespace pdfix::cli {

namespace {

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

// What a fetch did, and what it leaves the analysis host without.
struct Result {
  std::string cache;
  std::vector<store::Fetched> fetched;
  std::vector<store::Binary> idless;  // files samples hit that no record names by build-id
  uint64_t samples = 0;
  std::map<store::Outcome, int64_t> counts;
  int64_t asked = 0;      // lookups that went to the servers
  int64_t not_there = 0;  // anything but present, fetched or cached
  double idless_share = 0;

  int64_t count(store::Outcome o) const {
    auto it = counts.find(o);
    return it == counts.end() ? 0 : it->second;
  }
  int status(bool strict) const {
    if (asked > 0 && count(store::Outcome::kUnreachable) == asked) return kExitError;
    if (strict && (not_there > 0 || !idless.empty())) return kExitIncomplete;
    return kExitOk;
  }
};

absl::StatusOr<Result> run_fetch(const Args& a, const resolve::Host& host) {
  Result r;
  r.cache = a.cache.empty() ? default_cache(host) : a.cache;
  if (r.cache.empty()) return absl::InvalidArgumentError("no HOME: give --buildid-dir DIR");
  std::string urls = a.urls;
  if (const std::string env = host.debuginfod_urls(); urls.empty() && !env.empty()) urls = env;
  auto in = io::open_input(a.in);
  if (!in.ok()) return in.status();
  auto dsos =
      inspect::list_build_ids(*in, {.hits = a.hits, .every_source = true, .count_samples = true});
  if (!dsos.ok()) return dsos.status();
  auto named = store::find_binaries(*dsos, {}, host, {});
  if (!named.ok()) return named.status();
  Progress progress("fetch");
  auto fetched =
      store::fetch_binaries(named->binaries, {.cache = r.cache,
                                              .client_cache = host.debuginfod_client_cache(),
                                              .urls = urls,
                                              .debuginfo = a.debuginfo,
                                              .progress = a.quiet ? nullptr : progress.callback()});
  if (!fetched.ok()) return fetched.status();
  r.fetched = *std::move(fetched);
  r.idless = std::move(named->idless);
  r.samples = named->samples;
  for (const store::Fetched& f : r.fetched) {
    ++r.counts[f.outcome];
    if (f.asked) ++r.asked;
    if (!store::in_cache_now(f.outcome)) ++r.not_there;
  }
  uint64_t idless_samples = 0;
  for (const store::Binary& b : r.idless) idless_samples += b.samples;
  r.idless_share =
      r.samples == 0 ? 0.0
                     : 100.0 * static_cast<double>(idless_samples) / static_cast<double>(r.samples);
  return r;
}

void print_json(const Result& r) {
  llvm::json::Array rows;
  for (const store::Fetched& f : r.fetched) {
    rows.push_back(llvm::json::Object{{"build_id", f.build_id},
                                      {"name", format::escape_invalid_utf8(f.name)},
                                      {"what", f.what},
                                      {"outcome", std::string(store::name(f.outcome))},
                                      {"detail", f.detail}});
  }
  llvm::json::Array idless;
  for (const store::Binary& b : r.idless) {
    idless.push_back(llvm::json::Object{{"name", format::escape_invalid_utf8(b.name)},
                                        {"samples", static_cast<int64_t>(b.samples)}});
  }
  llvm::json::Object totals;
  for (const auto& [k, v] : r.counts) totals[std::string(store::name(k))] = v;
  cli::print_json(llvm::json::Object{{"cache", r.cache},
                                     {"binaries", std::move(rows)},
                                     {"counts", std::move(totals)},
                                     {"samples", static_cast<int64_t>(r.samples)},
                                     {"without_build_id", std::move(idless)},
                                     {"without_build_id_share", r.idless_share}},
                  std::cout);
}

void print_text(const Result& r, int status, std::ostream& os) {
  using store::Outcome;
  os << absl::StrFormat(
      "fetch into %s: %d fetched, %d from libdebuginfod's cache, %d already there, %d missing, "
      "%d unreachable, %d failed\n",
      r.cache, r.count(Outcome::kFetched), r.count(Outcome::kCached), r.count(Outcome::kPresent),
      r.count(Outcome::kMissing), r.count(Outcome::kUnreachable), r.count(Outcome::kFailed));
  for (const store::Fetched& f : r.fetched) {
    if (f.outcome == Outcome::kPresent) continue;
    os << absl::StrFormat("  %-11s %-40s %s (%s)%s%s\n", store::name(f.outcome), f.build_id,
                          format::escape_invalid_utf8(f.name), f.what, f.detail.empty() ? "" : ": ",
                          f.detail);
  }
  if (!r.idless.empty()) {
    os << absl::StrFormat(
        "  %d files that samples hit have no build-id in the recording (%.1f%% of samples): "
        "debuginfod serves files by build-id, so nothing can fetch them; run pdfix fix where it "
        "was recorded, and for a file with no GNU build-id of its own (a Go program, by default) "
        "pdfix fix --archive there, which keeps it by path\n",
        r.idless.size(), r.idless_share);
  }
  if (status == kExitError) {
    os << "  no server could be asked: check --debuginfod or DEBUGINFOD_URLS\n";
  } else if (r.count(Outcome::kMissing) > 0) {
    os << "  (missing binaries stay unresolved in reports: no server has them)\n";
  }
}

}  // namespace

Verb add_fetch(CLI::App& app, const resolve::Host& host) {
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
            auto r = run_fetch(*a, host);
            if (!r.ok()) return fail(r.status());
            const int status = r->status(a->strict);
            if (a->json) {
              print_json(*r);
            } else {
              Summary say(a->quiet);
              print_text(*r, status, say.out());
            }
            return status;
          }};
}

}  // namespace pdfix::cli
