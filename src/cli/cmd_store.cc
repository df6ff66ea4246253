#include <iostream>

#include "cli/keep.h"
#include "cli/verb.h"
#include "llvm/Support/JSON.h"

namespace pdfix::cli {

Verb add_store(CLI::App& app, const resolve::Host& host) {
  struct Args {
    std::string in;
    std::string cache;
    bool json = false;
    KeepArgs keep;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "store",
      {"pdfix store", "the binaries a recording names, into perf's build-id cache",
       "pdfix store [--buildid-dir DIR] [--hits] [--strict] [--sysroot DIR] [--search DIR]... "
       "[--json] IN",
       R"(Adds every binary that IN's build-ids name to a build-id cache, in perf's own layout
(DIR/<path>/<id>/elf, [kernel.kallsyms]/<id>/kallsyms, [vdso]/<id>/vdso and the
.build-id/xx/... links), as `perf buildid-cache -a` would, so that `perf report` finds them
after the files on disk have changed. Only copies proven to be the binary named are stored,
by the rules of `pdfix archive --help`; what is missing is listed, and every binary that
samples hit and the cache will not resolve, with its share of the samples. A file without a
build-id, proven by its inode, goes into DIR/.symfs/<first 16 hex digits of its SHA-256>/
<path>: a root for perf report --symfs that no other file at its path shares.

Files already in the cache are kept. Each file and link is written under a temporary name
and renamed into place, so two stores at once, or a perf reading meanwhile, see whole files.)",
       exit_status({{kExitIncomplete, kStrictExit}})});
  cmd->add_option("IN", a->in, "The recording (a file or a directory recording).")->required();
  cmd->add_option("--buildid-dir", a->cache,
                  "The build-id cache to fill (default: $PERF_BUILDID_DIR, else ~/.debug).")
      ->type_name("DIR");
  cmd->add_option("--sysroot", a->keep.sysroot,
                  "A copy of the recording host's root: binaries are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  cmd->add_flag("--json", a->json, "The summary as one JSON object on stdout.");
  cmd->add_flag("-v,--verbose", a->keep.verbose, "List every binary stored, with its evidence.");
  add_keep_options(*cmd, a->keep, /*bundle_options=*/false);
  add_slim_flag(*cmd, a->keep.slim);
  return {cmd, [a, &host] {
            const std::string cache = a->cache.empty() ? default_cache(host) : a->cache;
            if (cache.empty()) {
              return fail(absl::InvalidArgumentError("no HOME: give --buildid-dir DIR"));
            }
            llvm::json::Object summary;
            const int status =
                keep(a->in, {.cache = cache}, a->keep, host, {}, a->json ? &summary : nullptr);
            if (status != kExitError && a->json) {
              print_json(std::move(summary), std::cout);
            }
            return status;
          }};
}

}  // namespace pdfix::cli
