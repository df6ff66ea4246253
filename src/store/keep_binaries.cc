#include "store/keep_binaries.h"

#include "absl/strings/str_cat.h"
#include "store/bundle.h"
#include "store/cache_store.h"

namespace pdfix::store {
namespace {

std::span<const uint8_t> bytes_of(const llvm::MemoryBuffer& b) {
  return {reinterpret_cast<const uint8_t*>(b.getBufferStart()), b.getBufferSize()};
}

absl::Status add_recording(BundleWriter& w, const io::Input& in) {
  if (!in.directory) return w.add_file("perf.data", in.mapped->bytes(), 0600);
  if (auto s = w.add_file("perf.data/data", in.mapped->bytes(), 0600); !s.ok()) return s;
  for (size_t i = 0; i < in.parts.size(); ++i) {
    if (auto s = w.add_file("perf.data/" + in.part_name(i), in.parts[i]->bytes(), 0600); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Calls `keep` with each binary that has a proven copy, its cache entry and its bytes.
absl::Status for_each_proven(
    const std::vector<Binary>& binaries, const resolve::Host& host, const KeepProgress& progress,
    const std::function<absl::Status(size_t, const CacheEntry&, const llvm::MemoryBuffer&)>& keep) {
  for (size_t i = 0; i < binaries.size(); ++i) {
    const Binary& b = binaries[i];
    auto entry = cache_entry(b.name, b.id, b.kind);
    if (b.from != Binary::From::kNothing && entry) {
      auto image = load_binary(b, host);
      if (!image.ok()) return image.status();
      if (auto s = keep(i, *entry, **image); !s.ok()) return s;
    }
    if (progress) progress(i + 1, binaries.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Kept> archive_recording(const io::Input& in, const std::vector<Binary>& binaries,
                                       const resolve::Host& host, const std::string& path,
                                       int zstd_level, const KeepProgress& progress) {
  if (!in.mapped) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.name, ": a bundle is made from a file or a directory recording, not from a pipe"));
  }
  auto w = BundleWriter::create(path, zstd_level);
  if (!w.ok()) return w.status();
  if (auto s = add_recording(**w, in); !s.ok()) return s;
  Kept kept;
  auto s = for_each_proven(
      binaries, host, progress,
      [&](size_t i, const CacheEntry& entry, const llvm::MemoryBuffer& image) -> absl::Status {
        const Binary& b = binaries[i];
        const unsigned mode = b.kind == EntryKind::kKallsyms ? 0600 : 0644;
        if (auto s = (*w)->add_file(".debug/" + entry.file, bytes_of(image), mode); !s.ok()) {
          return s;
        }
        ++kept.added;
        // A second file of the same id (a vmlinux beside kallsyms) shares the link.
        const bool linked =
            i > 0 && binaries[i - 1].id == b.id && binaries[i - 1].from != Binary::From::kNothing;
        return linked ? absl::OkStatus()
                      : (*w)->add_symlink(".debug/" + entry.link, entry.link_target);
      });
  if (!s.ok()) return s;
  if (auto s = (*w)->commit(); !s.ok()) return s;
  kept.bytes = (*w)->bytes_written();
  return kept;
}

absl::StatusOr<Kept> store_binaries(const std::vector<Binary>& binaries, const resolve::Host& host,
                                    const std::string& cache, const KeepProgress& progress) {
  Kept kept;
  auto s = for_each_proven(
      binaries, host, progress,
      [&](size_t, const CacheEntry& entry, const llvm::MemoryBuffer& image) -> absl::Status {
        auto stored = store_in_cache(cache, entry, bytes_of(image));
        if (!stored.ok()) return stored.status();
        if (*stored == Stored::kAdded) {
          ++kept.added;
          kept.bytes += image.getBufferSize();
        } else {
          ++kept.present;
        }
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return kept;
}

}  // namespace pdfix::store
