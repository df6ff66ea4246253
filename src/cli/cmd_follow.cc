// `pdfix follow`: fix every chunk of an always-on recording as perf finishes it (follow/follow.h),
// each with the same run and options as `pdfix fix`.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cli/export_run.h"
#include "cli/fix_run.h"
#include "cli/verb.h"
#include "follow/follow.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "passes/repair.h"
#include "store/bundle_chain.h"
#include "store/find_memory.h"

namespace pdfix::cli {
namespace {

// One JSON line, in one write(2): the service reading follow's output may be killed at any
// time, and a line that a stream's buffer flushed in pieces is cut where the kill fell, no JSON
// for jq or the next reader.
void print_line(const llvm::json::Value& value) {
  std::string line;
  llvm::raw_string_ostream(line) << value << "\n";
  std::cout.flush();
  for (size_t at = 0; at < line.size();) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + at, line.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stdout gone: there is nowhere to say it
    at += static_cast<size_t>(n);
  }
}

constexpr const char* kDescription =
    R"(Watches DIR, where `perf record --switch-output` writes (for a `perf daemon` session, its
daemon.base/session-NAME), and fixes each chunk as soon as perf has finished it: perf writes
BASE (perf.data, or its -o name) and at each switch renames it BASE.<timestamp>; a chunk is
taken by that name only, so a chunk perf is still writing is never read. Each is fixed as
`pdfix fix` would fix it, with the same options (--unwind, --store, --search, ...), into OUTDIR
under its own name, while the processes it maps still live: the maps their files and
/proc/PID/root prove are the ones lost when chunks are fixed later. perf turns build-ids off
under --switch-output; pdfix puts them in. A chunk of another BASE in DIR is named on stderr,
with the --base it needs.

Chunks already in DIR are fixed first, oldest first. What is finished is written, after the
fixed chunk is on disk, to OUTDIR/.pdfix-follow-journal: pdfix stopped at any point (even by
SIGKILL) and started again fixes no chunk twice and skips none. A chunk whose perf was killed
while writing it is fixed as far as its whole records go and reported incomplete; one that
perf removed first (--switch-max-files) is reported as gone. One that could not be fixed (no
space left in OUTDIR or the store, a damaged chunk) is reported, left as it was, and tried
again while the run goes on: at once after a later chunk is fixed (three times), else after
--retry-after seconds, the delay doubled at each try up to an hour; and at the next start. The
journal names only chunks that are done. The raw chunk is removed only
with --remove-raw, and only after its fixed copy is complete and synced to disk.

With --archive DIR, each fixed chunk also goes into a bundle of its own, DIR/<chunk>.tar.zst,
as `pdfix fix --archive` makes one, holding only the binaries that no earlier bundle in DIR
holds: its manifest names the bundle beside it that holds each of the others, and
`pdfix unpack` takes them from there. What DIR's bundles hold is kept in DIR/.pdfix-bundle-chain,
so that a run started again goes on with the same chain. --self-contained makes each bundle
hold all its binaries.

With --export DIR, each fixed chunk's samples also go into a profile of their own,
DIR/<chunk>.pb.gz (or .otlp, .folded: --export-format), as `pdfix export` makes it from the
fixed chunk; the binaries' symbols, once read, are kept from chunk to chunk while their files
are unchanged. A chunk is done only when its profile is there too.

SIGINT or SIGTERM stops the run after the chunk under way, with a summary. With --once, the
chunks present are fixed and pdfix exits: a backlog in one run. --json prints a line of JSON a
chunk on stdout (its name, exit status, bytes, seconds and fix's report), then the summary's.)";

}  // namespace

Verb add_follow(CLI::App& app, const resolve::Host& host) {
  struct Args {
    follow::FollowConfig config;
    std::vector<std::unique_ptr<passes::RepairKind>> kinds = passes::repair_kinds();
    std::shared_ptr<FixOptions> fix;
    bool self_contained = false;
    std::string export_dir;
    std::string export_format = "pprof";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "follow",
      {"pdfix follow", "fix each chunk of perf record --switch-output as perf finishes it",
       "pdfix follow [OPTIONS] DIR OUTDIR", kDescription,
       exit_status({{kExitIncomplete,
                     "a chunk could not be fixed, or was fixed with something "
                     "missing (see fix's EXIT STATUS)."}})});
  cmd->add_option("DIR", a->config.dir, "Where perf writes its chunks.")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("OUTDIR", a->config.out_dir, "Where the fixed chunks go (not DIR).")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--base", a->config.base, "perf record's -o name (default perf.data).")
      ->type_name("NAME");
  cmd->add_flag("--remove-raw", a->config.remove_raw,
                "Remove each chunk once its fixed copy is on disk.");
  cmd->add_flag("--once", a->config.once, "Fix the chunks present, then exit.");
  cmd->add_option("--retry-after", a->config.retry_after,
                  "Seconds before a chunk not fixed is tried again, doubled at each try "
                  "(default 30).")
      ->type_name("SECONDS")
      ->check(CLI::PositiveNumber);
  std::vector<passes::RepairKind*> kinds;
  for (const auto& k : a->kinds) kinds.push_back(k.get());
  a->fix = add_fix_options(*cmd, kinds);
  a->fix->archive
      ->description(
          "Also bundle each fixed chunk as DIR/<chunk>.tar.zst with the binaries no earlier "
          "bundle in DIR holds (see --self-contained).")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--self-contained", a->self_contained,
                "With --archive: each bundle holds all its chunk's binaries.")
      ->needs(a->fix->archive);
  CLI::Option* exporting =
      cmd->add_option("--export", a->export_dir,
                      "Also export each fixed chunk's samples as DIR/<chunk>.pb.gz (see "
                      "--export-format), as `pdfix export` does.")
          ->type_name("DIR")
          ->check(CLI::ExistingDirectory);
  cmd->add_option("--export-format", a->export_format,
                  "With --export: pprof (default), otlp or folded.")
      ->check(CLI::IsMember({"pprof", "otlp", "folded"}))
      ->type_name("FORMAT")
      ->needs(exporting);
  return {cmd, [a, &host] {
            const FixArgs& options = a->fix->args;
            std::error_code ec;
            if (std::filesystem::equivalent(a->config.dir, a->config.out_dir, ec)) {
              return fail(absl::InvalidArgumentError("OUTDIR must not be DIR"));
            }
            if (!options.archive.empty() &&
                std::filesystem::equivalent(a->config.dir, options.archive, ec)) {
              return fail(absl::InvalidArgumentError("--archive's DIR must not be DIR"));
            }
            if (!a->export_dir.empty() &&
                std::filesystem::equivalent(a->config.dir, a->export_dir, ec)) {
              return fail(absl::InvalidArgumentError("--export's DIR must not be DIR"));
            }
            if (auto s = check_fix_args(options); !s.ok()) return fail(s);
            const std::vector<passes::RepairKind*> chosen = a->fix->chosen();
            // What earlier chunks' binaries were found to be, for the chunks after.
            RunMemory memory;
            a->config.bundle_dir = options.archive;
            std::optional<store::BundleChain> chain;
            if (!options.archive.empty() && !a->self_contained) {
              auto opened = store::BundleChain::open(options.archive);
              if (!opened.ok()) return fail(opened.status());
              chain.emplace(*std::move(opened));
              memory.bundles = &*chain;
            }
            // The symbolizer's binaries, read once for all chunks while their files stay.
            std::unique_ptr<profile::Symbolizer> symbolizer;
            keep_freed_memory_between_recordings();
            const auto fix = [&](const std::string& in, const std::string& out,
                                 llvm::json::Object& report) {
              FixArgs args = options;
              args.in = in;
              args.out = out;
              if (!options.archive.empty()) {
                args.archive = follow::bundle_path(a->config, std::filesystem::path(in).filename());
              }
              // This host as it is now: what it remembered for the chunk before (mounts,
              // modules) may have changed since.
              const std::unique_ptr<resolve::Host> now = host.anew();
              // Each chunk's own report is its JSON line's, or else fix's text.
              const int fixed = run_fix("follow", chosen, args, *now,
                                        options.json ? &report : nullptr, false, &memory);
              if (fixed == kExitError || a->export_dir.empty()) return fixed;
              // The profile of the fixed chunk: the chunk is done only when it is there too.
              ExportArgs e{.in = out,
                           .out = (std::filesystem::path(a->export_dir) /
                                   std::filesystem::path(in).filename())
                                      .string() +
                                  export_extension(a->export_format),
                           .format = a->export_format,
                           .sysroot = options.sysroot,
                           .search = options.search,
                           .quiet = true};
              llvm::json::Object exported;
              const int status = run_export(e, *now, exported, &symbolizer, &memory.ids);
              if (status == kExitError) {
                if (const llvm::json::Value* error = exported.get("error")) {
                  report["error"] = *error;
                }
              }
              report["export"] = std::move(exported);
              // A chunk without samples (an idle stretch) is exported empty, and is done.
              return status == kExitError ? status : fixed;
            };
            Summary say(options.quiet);
            const auto each = [&](llvm::json::Object chunk) {
              // A chunk not fixed is named on stderr in any case: the error above it names an
              // offset, not the file.
              if (!options.json || chunk.getInteger("status").value_or(0) == kExitError) {
                say.out() << "follow: " << chunk.getString("chunk").value_or("").str() << ": "
                          << chunk.getString("note").value_or("fixed").str() << "\n";
              }
              if (options.json) print_line(llvm::json::Value(std::move(chunk)));
            };
            // Said even with --quiet: a run with the wrong --base would fix nothing, silently.
            const auto notice = [](const std::string& text) {
              std::cerr << "follow: " << text << "\n";
            };
            auto summary = follow::follow(a->config, fix, each, notice);
            if (!summary.ok()) return fail(summary.status());
            // The run's summary: on stderr, and as the last JSON line.
            llvm::json::Object total{
                {"fixed", summary->fixed},         {"incomplete", summary->incomplete},
                {"not_fixed", summary->failed},    {"gone", summary->gone},
                {"earlier", summary->earlier},     {"bytes_in", summary->bytes_in},
                {"bytes_out", summary->bytes_out}, {"seconds", summary->seconds}};
            if (!options.archive.empty()) total["bytes_bundled"] = summary->bytes_bundled;
            if (summary->stop_signal != 0) {
              total["stopped_by"] = summary->stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
            }
            say.out() << absl::StrCat("follow: ", summary->fixed, " fixed, ", summary->incomplete,
                                      " with something missing, ", summary->failed,
                                      " not fixed (left as they were), ", summary->gone,
                                      " gone before they could be, ", summary->earlier,
                                      " done by an earlier run\n");
            if (options.json) {
              print_line(llvm::json::Value(llvm::json::Object{{"summary", std::move(total)}}));
            }
            return summary->incomplete + summary->failed + summary->gone > 0 ? kExitIncomplete
                                                                             : kExitOk;
          }};
}

}  // namespace pdfix::cli
