#include "cli/keep.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/pass_options.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "inspect/buildid_list.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"
#include "store/keep_step.h"
#include "transform/look_ahead.h"

namespace pdfix::cli {
namespace {

const char* kind_name(store::EntryKind kind) {
  switch (kind) {
    case store::EntryKind::kKallsyms:
      return "kallsyms";
    case store::EntryKind::kVdso:
      return "vdso";
    case store::EntryKind::kVmlinux:
      return "vmlinux";
    case store::EntryKind::kDebug:
      return "debuginfo";
    case store::EntryKind::kElf:
      break;
  }
  return "elf";
}

std::string mib(uint64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

const char* const kStrictExit =
    "with --strict, a binary that samples hit will not resolve from what was kept (no build-id "
    "in the recording, or no proven copy); without it, only when samples hit binaries and the "
    "recording names none by build-id (run pdfix fix first).";

void add_keep_options(CLI::App& cmd, KeepArgs& args, bool bundle_options) {
  cmd.add_flag("--hits", args.hits_only,
               "Only the binaries that samples or callchain entries fall in (default: every "
               "binary the recording names with a build-id).");
  cmd.add_flag("--strict", args.strict,
               "Exit 3 when a binary that samples hit will not resolve from what was kept.");
  add_quiet_flag(cmd, args.quiet);
  add_no_debug_flag(cmd, args.no_debug);
  add_search_option(cmd, args.search);
  if (bundle_options) {
    cmd.add_option("--bundle-zstd-level", args.zstd_level,
                   "The bundle's zstd level, 1 to 19 (default 3).")
        ->check(CLI::Range(1, 19))
        ->type_name("N");
  }
}

void add_no_debug_flag(CLI::App& cmd, bool& no_debug) {
  cmd.add_flag("--no-debug", no_debug,
               "Leave out each binary's separate debug file (a -dbg or dbgsym package's, perf's "
               "cache's, libdebuginfod's), which perf reads for the symbols a stripped binary "
               "lacks: a smaller bundle, and those symbols raw addresses.");
}

const char* const kSlimAnnotate =
    "slim copies hold no code: perf annotate needs a bundle made with --with-code";

CLI::Option* add_with_code_flag(CLI::App& cmd, bool& with_code) {
  return cmd.add_flag(
      "--with-code", with_code,
      "Keep whole binaries, code and data too, for perf annotate (default: slim copies, "
      "with what perf report, perf script and hotspot read: symbol tables, unwind "
      "tables, notes and debug information, at the offsets they had).");
}

CLI::Option* add_slim_flag(CLI::App& cmd, bool& slim) {
  return cmd.add_flag(
      "--slim", slim,
      "Store slim copies (symbol tables, unwind tables, notes and debug information; "
      "no code), as for a cache a fleet's debuginfod serves (default: whole binaries, "
      "for perf annotate).");
}

namespace {
// What a slim copy cannot do, said where it goes.
const char* slim_annotate(bool archive) {
  return archive ? kSlimAnnotate
                 : "slim copies hold no code: perf annotate needs them stored without --slim";
}
}  // namespace

std::string default_cache(const resolve::Host& host) { return host.buildid_cache_path(); }

namespace {

std::string label(const store::Binary& b) {
  return format::escape_invalid_utf8(b.name) +
         (b.kind == store::EntryKind::kVmlinux ? " (vmlinux)" : "");
}

}  // namespace

int keep(const std::string& recording, const KeepTarget& target, const KeepArgs& args,
         const resolve::Host& host, const KeepRun& run, llvm::json::Object* json) {
  const bool archive = !target.bundle.empty();
  // The recording is read for its listing unless the run made it, and a bundle holds it.
  std::optional<io::Input> in;
  if (archive || run.listing == nullptr) {
    auto opened = io::open_input(recording);
    if (!opened.ok()) return fail(opened.status(), json);
    if (!opened->mapped) {
      return fail(
          absl::InvalidArgumentError(
              recording + ": binaries are kept for a recording in a file or directory, not a pipe"),
          json);
    }
    in.emplace(*std::move(opened));
  }
  if (archive) {
    // A bundle holds the recording as it is, which perf cannot read.
    if (unfinished_cut(*in)) {
      return fail(absl::InvalidArgumentError(
                      recording +
                      ": perf record never finished this file (it was killed): run pdfix fix on "
                      "it first, and archive what fix writes"),
                  json);
    }
  }
  std::optional<resolve::RecordedDsos> listed;
  if (run.listing == nullptr) {
    auto dsos = inspect::list_build_ids(
        *in, {.hits = args.hits_only, .every_source = true, .count_samples = true});
    if (!dsos.ok()) return fail(dsos.status(), json);
    listed = *std::move(dsos);
  }
  const resolve::RecordedDsos* dsos = run.listing != nullptr ? run.listing : &*listed;
  const passes::Common* common = run.common;
  std::optional<passes::Common> own;
  if (common == nullptr) {
    common = &own.emplace(passes::common_for(&*in, args.sysroot, args.search, host, {}));
  }
  Summary say(args.quiet);
  Progress progress(archive ? "archive" : "store");
  auto outcome = store::keep_recording({.dsos = dsos,
                                        .facts = passes::recording_facts(*dsos, *common),
                                        .resolver = common->resolver.get(),
                                        .recording = archive ? &*in : nullptr,
                                        .bundle = target.bundle,
                                        .cache = target.cache,
                                        .more_caches = args.more_caches,
                                        .debug_files = !args.no_debug,
                                        .slim = archive ? !args.with_code : args.slim,
                                        .zstd_level = args.zstd_level,
                                        .progress = say.quiet() ? nullptr : progress.callback(),
                                        .memory = run.memory,
                                        .chain = run.chain},
                                       host);
  if (!outcome.ok()) return fail(outcome.status(), json);
  const store::Named* named = &outcome->named;
  const store::Kept* kept = &outcome->kept;
  const std::vector<store::Binary>& binaries = named->binaries;

  const store::Verdict verdict = outcome->verdict();
  const size_t missing = verdict.missing;
  const std::vector<const store::Binary*>& unresolved = verdict.unresolved;
  const uint64_t unresolved_samples = verdict.unresolved_samples;
  const bool no_ids = verdict.no_ids;
  const int status = verdict.incomplete(args.strict) ? kExitIncomplete : kExitOk;
  const std::string fix_first = archive ? "run pdfix fix first (or pdfix fix --archive)"
                                        : "run pdfix fix first (or pdfix fix --store)";

  if (json != nullptr) {
    llvm::json::Array rows;
    for (const store::Binary& b : binaries) {
      llvm::json::Object row{{"build_id", b.id.hex()},
                             {"name", format::escape_invalid_utf8(b.name)},
                             {"kind", kind_name(b.kind)},
                             {"samples", static_cast<int64_t>(b.samples)}};
      if (store::resolves(b)) {
        row["from"] = b.path.empty() ? b.evidence : b.path;
        row["evidence"] = b.evidence;
      } else {
        row["missing"] = b.missing;
      }
      rows.push_back(std::move(row));
    }
    llvm::json::Array unresolved_rows;
    for (const store::Binary* b : unresolved) {
      unresolved_rows.push_back(
          llvm::json::Object{{"build_id", b->id.size == 0 ? "" : b->id.hex()},
                             {"name", format::escape_invalid_utf8(b->name)},
                             {"reason", b->missing},
                             {"samples", static_cast<int64_t>(b->samples)},
                             {"share", store::share(b->samples, named->samples)}});
    }
    llvm::json::Array by_path_rows;
    for (const store::Binary& b : named->idless) {
      if (!store::resolves(b)) continue;
      llvm::json::Array pids;
      for (uint32_t pid : b.pids) pids.push_back(static_cast<int64_t>(pid));
      by_path_rows.push_back(llvm::json::Object{{"name", format::escape_invalid_utf8(b.name)},
                                                {"from", b.path},
                                                {"sha256", b.sha256},
                                                {"evidence", b.evidence},
                                                {"pids", std::move(pids)},
                                                {"samples", static_cast<int64_t>(b.samples)}});
    }
    llvm::json::Array roots;
    for (const std::string& r : kept->symfs_roots) roots.push_back(r);
    (*json)["binaries"] = std::move(rows);
    (*json)["by_path"] = std::move(by_path_rows);
    (*json)["symfs_roots"] = std::move(roots);
    (*json)["kept"] = static_cast<int64_t>(archive ? kept->added : kept->added + kept->present);
    (*json)["debug_files"] = static_cast<int64_t>(kept->debug);
    (*json)["missing"] = static_cast<int64_t>(missing);
    (*json)["samples"] = static_cast<int64_t>(named->samples);
    (*json)["unresolved"] = std::move(unresolved_rows);
    (*json)["unresolved_share"] = store::share(unresolved_samples, named->samples);
    (*json)["early_flushes"] = static_cast<int64_t>(dsos->early_flushes);
    (*json)["slim"] = static_cast<int64_t>(kept->slim);
    (*json)["bytes_left_out"] = static_cast<int64_t>(kept->left_out);
    const auto cost = [](const store::Cost& c) {
      return llvm::json::Object{{"files", static_cast<int64_t>(c.files)},
                                {"bytes", static_cast<int64_t>(c.bytes)}};
    };
    (*json)["cost"] = llvm::json::Object{{"hit", cost(kept->hit)},
                                         {"not_hit", cost(kept->not_hit)},
                                         {"debug_files", cost(kept->debug_cost)}};
    if (kept->slim > 0) (*json)["annotate"] = slim_annotate(archive);
    if (no_ids) (*json)["advice"] = fix_first;
    if (archive) {
      (*json)["bundle"] = target.bundle;
      (*json)["bundle_bytes"] = static_cast<int64_t>(kept->bytes);
      if (run.chain != nullptr) {
        (*json)["in_earlier_bundles"] = static_cast<int64_t>(kept->elsewhere);
      }
    } else {
      (*json)["cache"] = target.cache;
      (*json)["added"] = static_cast<int64_t>(kept->added);
      (*json)["already_present"] = static_cast<int64_t>(kept->present);
    }
    return status;
  }
  std::ostream& os = say.out();
  const std::string debug_files =
      kept->debug == 0 ? "" : absl::StrFormat(" and %d debug files", kept->debug);
  if (archive) {
    os << absl::StrFormat(
        "archive: %d binaries%s in %s (%s)%s, %d missing", kept->added - kept->debug, debug_files,
        target.bundle == "-" ? "<stdout>" : target.bundle, mib(kept->bytes),
        run.chain == nullptr
            ? ""
            : absl::StrFormat(", %d files in earlier bundles of the run", kept->elsewhere),
        missing);
  } else {
    os << absl::StrFormat("store: %d binaries%s added to %s (%s), %d already there, %d missing",
                          kept->added - kept->debug, debug_files, target.cache, mib(kept->bytes),
                          kept->present, missing);
  }
  if (kept->by_path > 0) {
    os << absl::StrFormat(
        " (%d without a build-id, kept by path for perf report --symfs%s)", kept->by_path,
        archive ? "" : absl::StrCat(": ", absl::StrJoin(kept->symfs_roots, ", ")));
  }
  if (unresolved.empty()) {
    os << absl::StrFormat("; every binary that samples hit resolves (%d samples)\n",
                          named->samples);
  } else {
    os << absl::StrFormat(
        "; %d %s that samples hit will not resolve: %.1f%% of %d samples stay raw addresses\n",
        unresolved.size(), unresolved.size() == 1 ? "binary" : "binaries",
        store::share(unresolved_samples, named->samples), named->samples);
  }
  for (const store::Binary* b : unresolved) {
    os << absl::StrFormat("  %-10s %-40s %s: %s (%.1f%% of samples)\n", "unresolved",
                          b->id.size == 0 ? "-" : b->id.hex(), label(*b), b->missing,
                          store::share(b->samples, named->samples));
  }
  for (const store::Binary& b : named->idless) {
    if (!store::resolves(b) || !args.verbose) continue;
    os << absl::StrFormat("  %-10s %-40s %s: %s\n", "by path", b.sha256.substr(0, 16), label(b),
                          b.evidence);
  }
  for (const store::Binary& b : binaries) {
    if (store::resolves(b) ? !args.verbose : b.samples > 0) continue;
    os << absl::StrFormat("  %-10s %-40s %s: %s\n", store::resolves(b) ? "kept" : "missing",
                          b.id.hex(), label(b),
                          store::resolves(b) ? b.evidence : b.missing + " (no samples)");
  }
  if (kept->added > 0) {
    os << absl::StrFormat(
        "  kept, before compression: %s for the %d files that samples hit, %s for %d without "
        "hits, %s for %d debug files\n",
        mib(kept->hit.bytes), kept->hit.files, mib(kept->not_hit.bytes), kept->not_hit.files,
        mib(kept->debug_cost.bytes), kept->debug_cost.files);
  }
  if (kept->slim > 0) {
    os << absl::StrFormat(
        "  %d slim copies (symbols, %sline tables): %s of code and data left "
        "out; %s\n",
        kept->slim, outcome->unwind_tables ? "unwind and " : "", mib(kept->left_out),
        slim_annotate(archive));
    if (!outcome->unwind_tables) {
      os << "  no unwind tables: the recording has no user stack copies to unwind\n";
    }
  }
  os << transform::early_flush_note(dsos->early_flushes);
  if (no_ids) {
    os << "  the recording names no binary by build-id: " << fix_first << "\n";
  } else if (!unresolved.empty() || missing > 0) {
    os << "  (what is missing needs the binaries on the analysis host, or a debuginfod server "
          "that has them)\n";
  }
  return status;
}

}  // namespace pdfix::cli
