#include "store/keep_binaries.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "store/bundle.h"
#include "store/cache_store.h"
#include "store/slim_elf.h"
#include "store/symfs_layout.h"

namespace pdfix::store {
namespace {

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

// What is kept of a file: its slim copy when one is asked for and it is ELF, else all of it.
struct Prepared {
  FileImage image;
  std::unique_ptr<SlimElf> slim;  // owns the section headers `image` views
};

Prepared prepare(EntryKind kind, const llvm::MemoryBuffer& bytes, const KeepOptions& options) {
  const std::span<const uint8_t> mapping = mapping_of(bytes);
  // kallsyms is text; the vdso is a page or two, which perf also reads code from to unwind.
  if (options.slim && kind != EntryKind::kKallsyms && kind != EntryKind::kVdso) {
    auto copy = slim_elf(bytes_of(bytes), {.unwind_tables = options.unwind_tables});
    if (copy.ok()) {
      FileImage image = (*copy)->image;
      image.mapping = mapping;
      return {std::move(image), std::move(*copy)};
    }
  }
  FileImage image = FileImage::whole(bytes_of(bytes));
  image.mapping = mapping;
  return {std::move(image), nullptr};
}

void count(Kept& kept, const Binary& b, const Prepared& p) {
  Cost& group = b.kind == EntryKind::kDebug ? kept.debug_cost
                : b.samples > 0             ? kept.hit
                                            : kept.not_hit;
  ++group.files;
  group.bytes += p.slim ? p.slim->kept : p.image.size;
  if (p.slim) {
    ++kept.slim;
    kept.left_out += p.slim->left_out;
  }
}

// A proven copy that cannot be read when it is kept (its process's root gone with the process, the
// file removed or rewritten since it was proven) is not kept: the binary is missing, saying why,
// and the recording is still kept. Only a failure to write fails the run.
void lose(Binary& b, const absl::Status& why) {
  b.from = Binary::From::kNothing;
  b.missing = absl::StrCat("gone before it was kept: ", why.message());
}

// Calls `keep` with each binary that has a proven copy, its cache entry and what is kept of it.
// Those for which `kept_already` says so are not read.
absl::Status for_each_proven(
    std::vector<Binary>& binaries, const resolve::Host& host, const KeepOptions& options,
    const std::function<absl::Status(size_t, const CacheEntry&, const Prepared&)>& keep,
    const std::function<absl::StatusOr<bool>(size_t, const CacheEntry&)>& kept_already) {
  for (size_t i = 0; i < binaries.size(); ++i) {
    Binary& b = binaries[i];
    auto entry = cache_entry(b.name, b.id, b.kind);
    if (b.from != Binary::From::kNothing && entry) {
      auto already = kept_already(i, *entry);
      if (!already.ok()) return already.status();
      if (*already) {
        if (options.progress) options.progress(i + 1, binaries.size());
        continue;
      }
    }
    if (b.from != Binary::From::kNothing && entry) {
      auto image = load_binary(b, host);
      if (image.ok()) {
        if (auto s = keep(i, *entry, prepare(b.kind, **image, options)); !s.ok()) return s;
      } else {
        lose(b, image.status());
      }
    }
    if (options.progress) options.progress(i + 1, binaries.size());
  }
  return absl::OkStatus();
}

// The file of `b` (kept by path), checked to be the content that was proven.
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> load_by_path(const Binary& b,
                                                                 const resolve::Host& host) {
  auto image = load_binary(b, host);
  if (!image.ok()) return image.status();
  if (sha256_hex(bytes_of(**image), mapping_of(**image)) != b.sha256) {
    return absl::AbortedError(absl::StrCat(b.path, ": changed while it was being kept"));
  }
  return image;
}

std::optional<format::BuildId> kept_kernel(const std::vector<Binary>& binaries) {
  for (const Binary& b : binaries) {
    if (b.kind == EntryKind::kKallsyms && !b.guest && b.from != Binary::From::kNothing) return b.id;
  }
  return std::nullopt;
}

// perf 6.1 given --symfs reads every file at the root, the build-id cache no longer: each
// binary kept by id is linked into the root at its path (the vdso as "[vdso]", where perf looks
// for it then), unless the root has a file there, and each debug file where distributions put it,
// usr/lib/debug/.build-id/xx/rest.debug. Where the bundle holds two ids for a path (a
// host's library and a container's), the root's is the one its processes mapped; when that is
// not one id, none is linked.
absl::Status link_binaries_with_ids(BundleWriter& w, const SymfsRoot& root,
                                    const std::vector<Binary>& binaries) {
  std::map<std::string, std::vector<const Binary*>> at_path;
  const auto link = [&](const std::string& name, const CacheEntry& entry) {
    // From the link's directory up to the bundle's top, then into .debug.
    std::string up;
    for (size_t n = std::count(name.begin(), name.end(), '/'); n > 0; --n) up += "../";
    return w.add_symlink(name, absl::StrCat(up, ".debug/", entry.file));
  };
  for (const Binary& b : binaries) {
    if (b.guest || b.from == Binary::From::kNothing) continue;
    if (b.kind == EntryKind::kElf || b.kind == EntryKind::kVdso) at_path[b.name].push_back(&b);
    if (b.kind != EntryKind::kDebug) continue;
    auto entry = cache_entry(b.name, b.id, b.kind);
    auto name = symfs_entry(root, resolve::distribution_debug_file(b.id));
    if (!entry || !name) continue;
    if (auto s = link(*name, *entry); !s.ok()) return s;
  }
  const auto of_root = [&](const Binary* b) {
    return std::any_of(b->pids.begin(), b->pids.end(), [&](uint32_t pid) {
      return std::binary_search(root.pids.begin(), root.pids.end(), pid);
    });
  };
  for (auto& [path, candidates] : at_path) {
    if (candidates.size() > 1) {
      std::erase_if(candidates, [&](const Binary* b) { return !of_root(b); });
    }
    const bool taken = std::any_of(root.files.begin(), root.files.end(),
                                   [&](const SymfsFile& f) { return f.path == path; });
    if (candidates.size() != 1 || taken) continue;
    const Binary& b = *candidates.front();
    auto entry = cache_entry(b.name, b.id, b.kind);
    auto name = b.kind == EntryKind::kVdso ? std::optional(absl::StrCat(root.dir, "/", b.name))
                                           : symfs_entry(root, b.name);
    if (!entry || !name) continue;
    if (auto s = link(*name, *entry); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status add_symfs(BundleWriter& w, std::vector<Binary>& by_path,
                       const std::vector<Binary>& binaries, const resolve::Host& host,
                       const KeepOptions& options, Kept& kept, BundleManifest& manifest) {
  // Read before the layout is made, which the manifest lists: a file lost is in neither.
  std::map<size_t, std::unique_ptr<llvm::MemoryBuffer>> images;
  for (size_t i = 0; i < by_path.size(); ++i) {
    Binary& b = by_path[i];
    if (b.from != Binary::From::kFile || b.sha256.empty()) continue;
    auto image = load_by_path(b, host);
    if (image.ok()) {
      images[i] = *std::move(image);
    } else {
      lose(b, image.status());
    }
  }
  const SymfsLayout layout = symfs_layout(by_path, kept_kernel(binaries));
  if (layout.roots.empty()) return absl::OkStatus();
  for (size_t r = 0; r < layout.roots.size(); ++r) {
    for (size_t i : layout.binaries[r]) {
      const Binary& b = by_path[i];
      auto name = symfs_entry(layout.roots[r], b.name);
      if (!name) continue;
      const Prepared p = prepare(b.kind, *images.at(i), options);
      if (auto s = w.add_file(*name, p.image, 0755); !s.ok()) return s;
      if (p.slim) manifest.slim.push_back(*name);
      count(kept, b, p);
      ++kept.added;
      ++kept.by_path;
    }
    if (auto s = link_binaries_with_ids(w, layout.roots[r], binaries); !s.ok()) return s;
    kept.symfs_roots.push_back(layout.roots[r].dir);
  }
  const std::string text = symfs_manifest(layout);
  return w.add_file(kSymfsManifest, {reinterpret_cast<const uint8_t*>(text.data()), text.size()},
                    0644);
}

}  // namespace

absl::StatusOr<Kept> archive_recording(const io::Input& in, Named& named, const resolve::Host& host,
                                       const std::string& path, const KeepOptions& options) {
  std::vector<Binary>& binaries = named.binaries;
  if (!in.mapped) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.name, ": a bundle is made from a file or a directory recording, not from a pipe"));
  }
  auto w = BundleWriter::create(path, options.zstd_level);
  if (!w.ok()) return w.status();
  if (auto s = add_recording(**w, in); !s.ok()) return s;
  Kept kept;
  BundleManifest manifest{.unwind_tables = options.unwind_tables};
  const std::string own_name = std::filesystem::path(path).filename();
  // A second file of the same id (a vmlinux beside kallsyms, a debug file beside its binary)
  // shares the link.
  const auto link = [&](size_t i, const CacheEntry& entry) {
    const bool linked = i > 0 && binaries[i - 1].id == binaries[i].id &&
                        binaries[i - 1].from != Binary::From::kNothing;
    return linked ? absl::OkStatus() : (*w)->add_symlink(".debug/" + entry.link, entry.link_target);
  };
  auto s = for_each_proven(
      binaries, host, options,
      [&](size_t i, const CacheEntry& entry, const Prepared& p) -> absl::Status {
        const Binary& b = binaries[i];
        const unsigned mode = b.kind == EntryKind::kKallsyms ? 0600 : 0644;
        const std::string name = ".debug/" + entry.file;
        if (auto s = (*w)->add_file(name, p.image, mode); !s.ok()) return s;
        if (p.slim) manifest.slim.push_back(name);
        kept.files.emplace_back(name, p.slim != nullptr);
        count(kept, b, p);
        ++kept.added;
        kept.debug += b.kind == EntryKind::kDebug ? 1 : 0;
        return link(i, entry);
      },
      [&](size_t i, const CacheEntry& entry) -> absl::StatusOr<bool> {
        const std::string name = ".debug/" + entry.file;
        const HeldFile* held =
            options.chain != nullptr ? options.chain->holder(name, own_name) : nullptr;
        if (held == nullptr) return false;
        // In the earlier bundle: its link here, the file there.
        manifest.elsewhere[held->bundle].push_back(name);
        if (held->slim) manifest.slim.push_back(name);
        ++kept.elsewhere;
        if (auto s = link(i, entry); !s.ok()) return s;
        return true;
      });
  if (!s.ok()) return s;
  if (auto s = add_symfs(**w, named.idless, binaries, host, options, kept, manifest); !s.ok()) {
    return s;
  }
  if (!manifest.empty()) {
    const std::string text = bundle_manifest_json(manifest);
    if (auto s = (*w)->add_file(kBundleManifest,
                                {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, 0644);
        !s.ok()) {
      return s;
    }
  }
  if (auto s = (*w)->commit(); !s.ok()) return s;
  kept.bytes = (*w)->bytes_written();
  return kept;
}

absl::StatusOr<Kept> store_binaries(Named& named, const resolve::Host& host,
                                    const std::string& cache, const KeepOptions& options) {
  const std::vector<Binary>& binaries = named.binaries;
  Kept kept;
  auto s = for_each_proven(
      named.binaries, host, options,
      [&](size_t i, const CacheEntry& entry, const Prepared& p) -> absl::Status {
        auto stored = store_in_cache(cache, entry, p.image);
        if (!stored.ok()) return stored.status();
        kept.debug += *stored == Stored::kAdded && binaries[i].kind == EntryKind::kDebug ? 1 : 0;
        if (*stored == Stored::kAdded) {
          ++kept.added;
          count(kept, binaries[i], p);
          kept.bytes += p.slim ? p.slim->kept : p.image.size;
        } else {
          ++kept.present;
        }
        return absl::OkStatus();
      },
      [&](size_t, const CacheEntry& entry) -> absl::StatusOr<bool> {
        if (!holds_entry(cache, entry)) return false;
        ++kept.present;
        return true;
      });
  if (!s.ok()) return s;
  for (Binary& b : named.idless) {
    if (b.from != Binary::From::kFile || b.sha256.empty()) continue;
    const SymfsRoot root{absl::StrCat(".symfs/", b.sha256.substr(0, 16)), {}, {}};
    auto name = symfs_entry(root, b.name);
    if (!name) continue;
    auto image = load_by_path(b, host);
    if (!image.ok()) {
      lose(b, image.status());
      continue;
    }
    const Prepared p = prepare(b.kind, **image, options);
    auto stored = store_file(cache, *name, p.image);
    if (!stored.ok()) return stored.status();
    ++(*stored == Stored::kAdded ? kept.added : kept.present);
    if (*stored == Stored::kAdded) {
      count(kept, b, p);
      kept.bytes += p.slim ? p.slim->kept : p.image.size;
    }
    ++kept.by_path;
    kept.symfs_roots.push_back(absl::StrCat(cache, "/", root.dir));
  }
  return kept;
}

}  // namespace pdfix::store
