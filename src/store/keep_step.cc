#include "store/keep_step.h"

#include <filesystem>

namespace pdfix::store {

absl::StatusOr<KeepOutcome> keep_recording(const KeepRequest& r, const resolve::Host& host) {
  const bool archive = !r.bundle.empty();
  if (archive) {
    if (absl::Status s = io::refuse_input_as_output(*r.recording, r.bundle); !s.ok()) return s;
  }
  KeepOutcome out;
  auto named = find_binaries(*r.dsos, r.facts, host,
                             {.resolver = r.resolver,
                              .more_caches = r.more_caches,
                              .debug_files = r.debug_files,
                              .memory = r.memory});
  if (!named.ok()) return named.status();
  out.named = *std::move(named);
  out.unwind_tables = !archive || r.dsos->user_stacks;
  const KeepOptions options{.slim = r.slim,
                            .unwind_tables = out.unwind_tables,
                            .zstd_level = r.zstd_level,
                            .progress = r.progress,
                            .chain = archive ? r.chain : nullptr};
  auto kept = archive ? archive_recording(*r.recording, out.named, host, r.bundle, options)
                      : store_binaries(out.named, host, r.cache, options);
  if (!kept.ok()) return kept.status();
  out.kept = *std::move(kept);
  if (archive && r.chain != nullptr) {
    const std::string name = std::filesystem::path(r.bundle).filename();
    if (absl::Status s = r.chain->add(name, out.kept.files); !s.ok()) return s;
  }
  return out;
}

}  // namespace pdfix::store
