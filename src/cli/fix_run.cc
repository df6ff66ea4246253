#include "cli/fix_run.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/keep.h"
#include "cli/pass_options.h"
#include "cli/progress.h"
#include "format/unfinished.h"
#include "inspect/listing_tap.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::cli {

void add_fix_common(CLI::App& cmd, FixArgs& a) {
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

std::vector<passes::RepairKind*> FixOptions::chosen() const {
  std::vector<passes::RepairKind*> out;
  for (passes::RepairKind* k : kinds) {
    if (!k->fix_switch().empty() && !asked.at(k)) continue;
    if (!k->fix_skip_switch().empty() && skipped.at(k)) continue;
    out.push_back(k);
  }
  return out;
}

std::shared_ptr<FixOptions> add_fix_options(CLI::App& cmd,
                                            const std::vector<passes::RepairKind*>& kinds) {
  auto o = std::make_shared<FixOptions>();
  o->kinds = kinds;
  FixArgs& a = o->args;
  add_fix_common(cmd, a);
  o->archive = cmd.add_option("--archive", a.archive,
                              "Then bundle OUT with the binaries it names, as `pdfix archive "
                              "OUT BUNDLE` does.")
                   ->type_name("BUNDLE");
  cmd.add_flag("--store", a.store,
               "Then store the binaries OUT names in perf's build-id cache, as `pdfix store OUT` "
               "does.")
      ->excludes(o->archive);
  cmd.add_flag("--strict", a.strict,
               "With --archive or --store: exit 3 when a binary that samples hit will not "
               "resolve from what was kept.");
  add_no_debug_flag(cmd, a.no_debug);
  add_with_code_flag(cmd, a.with_code)->needs(o->archive);
  add_slim_flag(cmd, a.slim)->needs(cmd.get_option("--store"));
  // Passes fix runs only when asked: their switches, each set or not.
  for (passes::RepairKind* k : kinds) {
    if (const std::string sw = k->fix_switch(); !sw.empty()) {
      cmd.add_flag(sw, o->asked[k],
                   absl::StrCat("Also ", k->summary(), " (pdfix ", k->verb(), ")."));
    }
  }
  for (passes::RepairKind* k : kinds) {
    if (const std::string sw = k->fix_skip_switch(); !sw.empty()) {
      cmd.add_flag(sw, o->skipped[k],
                   absl::StrCat("Do not ", k->summary(), " (pdfix ", k->verb(), ")."));
    }
  }
  CliOptions options(cmd);
  for (passes::RepairKind* k : kinds) k->declare(options);
  return o;
}

absl::Status check_fix_args(const FixArgs& a) {
  if (!a.archive.empty() && a.out == "-") {
    return absl::InvalidArgumentError(
        "--archive puts OUT in the bundle: give OUT as a file, not '-'");
  }
  return absl::OkStatus();
}

int run_fix(const std::string& verb, const std::vector<passes::RepairKind*>& kinds,
            const FixArgs& a, const resolve::Host& host, llvm::json::Object* json, bool single,
            RunMemory* memory) {
  auto in = io::open_input(a.in, memory != nullptr ? &memory->chunks : nullptr);
  if (!in.ok()) return fail(in.status(), json);
  if (!a.archive.empty()) {
    if (auto s = io::refuse_input_as_output(*in, a.archive); !s.ok()) return fail(s, json);
  }
  const passes::Common common = passes::common_for(&*in, a.sysroot, a.search, host, kinds,
                                                   memory != nullptr ? &memory->ids : nullptr);
  std::optional<KeepTarget> target;
  if (!a.archive.empty()) target = KeepTarget{.bundle = a.archive};
  // The cache the run resolves from, --buildid-dir's when given, as `pdfix store` fills its own.
  if (a.store) {
    if (common.resolver->buildid_dir().empty()) {
      return fail(
          absl::InvalidArgumentError(
              "--store: no --buildid-dir, and no HOME or PERF_BUILDID_DIR to find perf's cache by"),
          json);
    }
    target = KeepTarget{.cache = common.resolver->buildid_dir()};
  }
  // What is kept is listed as the pipeline writes it: OUT is not read again.
  inspect::ListingTap listing({.every_source = true, .count_samples = true});
  const transform::MakeChain make = chain_of(kinds, common);
  Summary say(a.quiet);
  Progress progress(verb);
  auto chain = transform::run_pipeline(*in, a.out, make,
                                       {.progress = a.quiet ? nullptr : progress.callback(),
                                        .single_file = a.output.single_file,
                                        .zstd_level = a.output.zstd_level,
                                        .tap = target ? &listing : nullptr});
  if (!chain.ok()) return fail(chain.status(), json);
  std::vector<const passes::Repair*> repairs;
  for (const auto& pass : *chain) {
    repairs.push_back(dynamic_cast<const passes::Repair*>(pass.get()));
  }
  const std::optional<resolve::RecordedDsos> listed = listing.take();
  const KeepRun run{.common = &common,
                    .listing = listed ? &*listed : nullptr,
                    .memory = memory != nullptr ? &memory->found : nullptr,
                    .chain = memory != nullptr ? memory->bundles : nullptr};
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
  // Binaries not kept: the job is not done, and the recording written for it goes too (exit 2
  // leaves no output behind), so that follow, trying the chunk again, does not take it for done.
  const auto undone = [&](int kept) {
    if (kept == kExitError && a.out != "-") {
      std::error_code ec;
      std::filesystem::remove_all(a.out, ec);
    }
    return kept;
  };
  // A recording perf never ended is written whole as far as its records go; what perf would have
  // written last is not there.
  const std::optional<uint64_t> cut = unfinished_cut(*in);
  const int passes_status = cut || std::any_of(repairs.begin(), repairs.end(),
                                               [](const auto* r) { return r->incomplete(); })
                                ? kExitIncomplete
                                : kExitOk;
  if (json == nullptr) {
    if (cut) {
      say.out() << "pdfix " << verb << ": " << a.in << ": " << format::unfinished_note(*cut)
                << "\n";
    }
    for (const passes::Repair* r : repairs) r->report_text(say.out(), a.verbose);
    const int kept = target ? undone(keep(a.out, *target, keep_args, host, run, nullptr)) : kExitOk;
    return kept != kExitOk ? kept : passes_status;
  }
  const auto say_unfinished = [&] {
    if (cut) (*json)["unfinished"] = llvm::json::Object{{"cut_bytes", static_cast<int64_t>(*cut)}};
  };
  if (single && repairs.size() == 1) {
    *json = repairs.front()->report_json();
    say_unfinished();
    return passes_status;
  }
  say_unfinished();
  for (size_t i = 0; i < repairs.size(); ++i) {
    (*json)[kinds[i]->report_key()] = repairs[i]->report_json();
  }
  int status = passes_status;
  if (target) {
    llvm::json::Object kept;
    const int kept_status = undone(keep(a.out, *target, keep_args, host, run, &kept));
    if (kept_status == kExitError) {
      if (const llvm::json::Value* error = kept.get("error")) (*json)["error"] = *error;
      return kept_status;
    }
    if (kept_status != kExitOk) status = kept_status;
    (*json)[a.store ? "store" : "archive"] = std::move(kept);
  }
  return status;
}

void keep_freed_memory_between_recordings() {
  // glibc maps a large block of its own and unmaps it when freed, and returns a heap top above
  // its trim threshold; both thresholds otherwise start at 128 KiB. 32 MiB is the most
  // M_MMAP_THRESHOLD takes on 64-bit.
  constexpr int kMmapThreshold = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold);
}

}  // namespace pdfix::cli
