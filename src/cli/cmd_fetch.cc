#include <cstdlib>
#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/keep.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "io/input.h"
#include "store/binaries.h"
#include "store/fetch.h"

namespace pdfix::cli {

Verb add_fetch(CLI::App& app, const resolve::Host& host) {
  struct Args {
    std::string in;
    std::string cache;
    std::string urls;
    bool debuginfo = false;
    bool hits = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "fetch",
      {"pdfix fetch", "the binaries a recording names, from debuginfod servers",
       "pdfix fetch [--buildid-dir DIR] [--debuginfod URLS] [--debuginfo] [--hits] [--json] IN",
       R"(On the host that analyses a recording: for every build-id IN names whose binary the
build-id cache lacks, asks debuginfod servers (elfutils' libdebuginfod) for the executable,
checks that what arrives has that build-id, and stores it in perf's layout, so that
`perf --buildid-dir DIR report -i IN` finds it. With --debuginfo the separate debug file
too (DIR/<path>/<id>/debug). A kernel is asked for its vmlinux (stored as
[kernel.kallsyms]/<id>/vmlinux; servers have no kallsyms). DSOs of guests are skipped.

Servers: --debuginfod, else $DEBUGINFOD_URLS (space-separated URLs). A directory of
bundles written by `pdfix archive` is served by `debuginfod -Z .tar.zst=zstdcat DIR`.

Prints found / missing / failed; what is missing is not an error. IN may be '-' for stdin.)",
       "0 when every id was looked up (some may be missing), 2 on bad usage, unreadable input or "
       "no server given."});
  cmd->add_option("IN", a->in, "The recording ('-': stdin).")->required();
  cmd->add_option("--buildid-dir", a->cache,
                  "The build-id cache to fill (default: $PERF_BUILDID_DIR, else ~/.debug).")
      ->type_name("DIR");
  cmd->add_option("--debuginfod", a->urls,
                  "Space-separated server URLs (default: $DEBUGINFOD_URLS).")
      ->type_name("URLS");
  cmd->add_flag("--debuginfo", a->debuginfo, "Fetch the separate debug files too.");
  cmd->add_flag("--hits", a->hits, "Only the binaries that samples or callchains fall in.");
  cmd->add_flag("--json", a->json, "The result as one JSON object on stdout.");
  return {cmd, [a, &host] {
            const std::string cache = a->cache.empty() ? default_cache(host) : a->cache;
            if (cache.empty()) {
              return fail(absl::InvalidArgumentError("no HOME: give --buildid-dir DIR"));
            }
            std::string urls = a->urls;
            if (const char* env = std::getenv("DEBUGINFOD_URLS"); urls.empty() && env != nullptr) {
              urls = env;
            }
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            auto named = store::find_binaries(*in, host, {.hits_only = a->hits, .prove = false});
            if (!named.ok()) return fail(named.status());
            Progress progress("fetch");
            auto fetched = store::fetch_binaries(*named, {.cache = cache,
                                                          .urls = urls,
                                                          .debuginfo = a->debuginfo,
                                                          .progress = progress.callback()});
            if (!fetched.ok()) return fail(fetched.status());
            std::map<std::string, int64_t> counts;
            for (const store::Fetched& f : *fetched) ++counts[f.outcome];
            if (a->json) {
              llvm::json::Array rows;
              for (const store::Fetched& f : *fetched) {
                rows.push_back(llvm::json::Object{{"build_id", f.build_id},
                                                  {"name", format::escape_invalid_utf8(f.name)},
                                                  {"what", f.what},
                                                  {"outcome", f.outcome},
                                                  {"detail", f.detail}});
              }
              llvm::json::Object totals;
              for (const auto& [k, v] : counts) totals[k] = v;
              print_json(llvm::json::Object{{"cache", cache},
                                            {"binaries", std::move(rows)},
                                            {"counts", std::move(totals)}},
                         std::cout);
              return kExitOk;
            }
            std::cout << absl::StrFormat(
                "fetch into %s: %d fetched, %d already there, %d missing, %d failed\n", cache,
                counts["fetched"], counts["present"], counts["missing"], counts["failed"]);
            for (const store::Fetched& f : *fetched) {
              if (f.outcome == "present") continue;
              std::cout << absl::StrFormat("  %-8s %-40s %s (%s)%s%s\n", f.outcome, f.build_id,
                                           format::escape_invalid_utf8(f.name), f.what,
                                           f.detail.empty() ? "" : ": ", f.detail);
            }
            if (counts["missing"] > 0) {
              std::cout << "  (missing binaries stay unresolved in reports: no server has them)\n";
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
