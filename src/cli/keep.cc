#include "cli/keep.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "io/input.h"
#include "store/binaries.h"
#include "store/keep_binaries.h"

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

void add_keep_options(CLI::App& cmd, KeepArgs& args, bool bundle_options) {
  cmd.add_flag("--hits", args.hits_only,
               "Only the binaries that samples or callchain entries fall in (default: every "
               "binary the recording names with a build-id).");
  if (bundle_options) {
    cmd.add_option("--bundle-zstd-level", args.zstd_level, "The bundle's zstd level (default 3).")
        ->check(CLI::Range(1, 19))
        ->type_name("N");
  }
}

std::string default_cache(const resolve::Host& host) { return host.buildid_cache_path(); }

int keep(const std::string& recording, const KeepTarget& target, const KeepArgs& args,
         const resolve::Host& host, llvm::json::Object* json) {
  auto in = io::open_input(recording);
  if (!in.ok()) return fail(in.status());
  if (!in->mapped) {
    return fail(absl::InvalidArgumentError(
        recording + ": binaries are kept for a recording in a file or directory, not a pipe"));
  }
  auto binaries = store::find_binaries(
      *in, host,
      {.sysroot = args.sysroot, .cache_dir = host.buildid_cache(), .hits_only = args.hits_only});
  if (!binaries.ok()) return fail(binaries.status());
  const bool archive = !target.bundle.empty();
  Progress progress(archive ? "archive" : "store");
  auto kept = archive ? store::archive_recording(*in, *binaries, host, target.bundle,
                                                 args.zstd_level, progress.callback())
                      : store::store_binaries(*binaries, host, target.cache, progress.callback());
  if (!kept.ok()) return fail(kept.status());

  size_t missing = 0;
  llvm::json::Array rows;
  for (const store::Binary& b : *binaries) {
    const bool found = b.from != store::Binary::From::kNothing;
    if (!found) ++missing;
    llvm::json::Object row{{"build_id", b.id.hex()},
                           {"name", format::escape_invalid_utf8(b.name)},
                           {"kind", kind_name(b.kind)}};
    if (found) {
      row["from"] = b.path.empty() ? b.evidence : b.path;
      row["evidence"] = b.evidence;
    } else {
      row["missing"] = b.missing;
    }
    rows.push_back(std::move(row));
  }
  if (json != nullptr) {
    (*json)["binaries"] = std::move(rows);
    (*json)["kept"] = static_cast<int64_t>(archive ? kept->added : kept->added + kept->present);
    (*json)["missing"] = static_cast<int64_t>(missing);
    if (archive) {
      (*json)["bundle"] = target.bundle;
      (*json)["bundle_bytes"] = static_cast<int64_t>(kept->bytes);
    } else {
      (*json)["cache"] = target.cache;
      (*json)["added"] = static_cast<int64_t>(kept->added);
      (*json)["already_present"] = static_cast<int64_t>(kept->present);
    }
    return kExitOk;
  }
  if (archive) {
    std::cerr << absl::StrFormat("archive: %d binaries in %s (%s), %d missing\n", kept->added,
                                 target.bundle == "-" ? "<stdout>" : target.bundle,
                                 mib(kept->bytes), missing);
  } else {
    std::cerr << absl::StrFormat(
        "store: %d binaries added to %s (%s), %d already there, %d missing\n", kept->added,
        target.cache, mib(kept->bytes), kept->present, missing);
  }
  for (const store::Binary& b : *binaries) {
    const bool found = b.from != store::Binary::From::kNothing;
    if (found && !args.verbose) continue;
    std::cerr << absl::StrFormat("  %-8s %-40s %s: %s\n", found ? "kept" : "missing", b.id.hex(),
                                 format::escape_invalid_utf8(b.name) +
                                     (b.kind == store::EntryKind::kVmlinux ? " (vmlinux)" : ""),
                                 found ? b.evidence : b.missing);
  }
  if (missing > 0) {
    std::cerr << "  (analysis of what is missing needs the binaries on the analysis host, or a "
                 "debuginfod server that has them)\n";
  }
  return kExitOk;
}

}  // namespace pdfix::cli
