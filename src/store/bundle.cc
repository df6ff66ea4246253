#include "store/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/cache_layout.h"
#include "store/binaries.h"
#include "store/cache_store.h"
#include "store/libarchive.h"

namespace pdfix::store {

struct BundleSink {
  io::Output* out;
  LibArchive api;
};

namespace {

namespace fs = std::filesystem;

la_ssize_t write_to_output(struct archive* a, void* self, const void* buf, size_t n) {
  auto* sink = static_cast<BundleSink*>(self);
  if (absl::Status s = sink->out->write({static_cast<const uint8_t*>(buf), n}); !s.ok()) {
    sink->api.set_error(a, EIO, "%s", std::string(s.message()).c_str());
    return -1;
  }
  return static_cast<la_ssize_t>(n);
}

// libarchive's objects, freed by the function of the library that made them.
template <class T, class Free>
struct FreedBy {
  Free free;
  void operator()(T* p) const { free(p); }
};
using Entry =
    std::unique_ptr<archive_entry, FreedBy<archive_entry, decltype(LibArchive::entry_free)>>;
using Archive =
    std::unique_ptr<struct archive, FreedBy<struct archive, decltype(LibArchive::free)>>;

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  for (absl::string_view p :
       absl::StrSplit(absl::string_view(path.data(), path.size()), '/', absl::SkipEmpty())) {
    parts.emplace_back(p.data(), p.size());
  }
  return parts;
}

// Whether a symlink at `name` pointing to `target` resolves inside the tree, as the kernel would
// walk it lexically.
bool link_stays_inside(std::string_view name, std::string_view target) {
  if (target.empty() || target.front() == '/') return false;
  std::vector<std::string_view> parts = components(name);
  parts.pop_back();
  for (std::string_view part : components(target)) {
    if (part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
    } else {
      parts.push_back(part);
    }
  }
  return true;
}

absl::Status not_a_bundle(const std::string& bundle, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(bundle, ": not a pdfix bundle: ", why));
}

// The build-id cache entries of a bundle's `.debug`: one per .build-id link.
std::vector<std::pair<CacheEntry, std::string>> entries_of(const std::string& cache) {
  std::vector<std::pair<CacheEntry, std::string>> out;
  std::error_code ec;
  for (const auto& sub :
       fs::directory_iterator(absl::StrCat(cache, "/", resolve::kBuildIdLinks), ec)) {
    for (const auto& link : fs::directory_iterator(sub.path(), ec)) {
      const fs::path target = fs::read_symlink(link.path(), ec);
      if (ec || !target.string().starts_with("../../")) continue;
      CacheEntry e;
      e.link = absl::StrCat(resolve::kBuildIdLinks, "/", sub.path().filename().string(), "/",
                            link.path().filename().string());
      e.link_target = target.string();
      e.dir = e.link_target.substr(6);
      for (const auto& file : fs::directory_iterator(cache + "/" + e.dir, ec)) {
        if (!file.is_regular_file()) continue;
        CacheEntry f = e;
        f.file = absl::StrCat(e.dir, "/", file.path().filename().string());
        out.emplace_back(f, file.path().string());
      }
    }
  }
  return out;
}

// Everything but `.debug`'s links into `cache`, then `.debug` goes.
absl::StatusOr<std::pair<size_t, size_t>> merge_into(const std::string& bundle_cache,
                                                     const std::string& cache) {
  size_t files = 0;
  size_t added = 0;
  for (const auto& [entry, path] : entries_of(bundle_cache)) {
    auto bytes = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!bytes) {
      return absl::InternalError(
          absl::StrCat("cannot read ", path, ": ", bytes.getError().message()));
    }
    auto stored =
        store_in_cache(cache, entry,
                       data_of(path, {reinterpret_cast<const uint8_t*>((*bytes)->getBufferStart()),
                                      (*bytes)->getBufferSize()}));
    if (!stored.ok()) return stored.status();
    ++files;
    if (*stored == Stored::kAdded) ++added;
  }
  std::error_code ec;
  fs::remove_all(bundle_cache, ec);
  return std::pair{files, added};
}

// Unpacks `bundle` into `root`; with `only`, just the files it names (a bundle's files held by an
// earlier one of its chain), each erased from it once unpacked.
absl::Status extract(const LibArchive& api, const std::string& bundle, const std::string& root,
                     std::set<std::string>* only = nullptr) {
  Archive in(api.read_new(), {api.free});
  api.read_support_filter_all(in.get());
  api.read_support_format_tar(in.get());
  const int opened = bundle == "-" ? api.read_open_fd(in.get(), STDIN_FILENO, 1 << 16)
                                   : api.read_open_filename(in.get(), bundle.c_str(), 1 << 16);
  if (opened != ARCHIVE_OK) return not_a_bundle(bundle, api.error_string(in.get()));
  Archive disk(api.write_disk_new(), {api.free});
  api.write_disk_set_options(disk.get(), ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                             ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_TIME);
  bool has_recording = false;
  while (true) {
    archive_entry* e = nullptr;
    const int r = api.read_next_header(in.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      return not_a_bundle(bundle, api.error_string(in.get()));
    }
    std::string name = api.entry_pathname(e) != nullptr ? api.entry_pathname(e) : "";
    while (name.starts_with("./")) name.erase(0, 2);
    if (name.empty() || name == "." || name == "./" || (only != nullptr && !only->contains(name))) {
      api.read_data_skip(in.get());
      continue;
    }
    const std::string top = name.substr(0, name.find('/'));
    const mode_t type = api.entry_filetype(e);
    if (!is_inside(name) || (top != "perf.data" && top != ".debug" && top != kSymfsDir &&
                             !(name == kBundleManifest && type == AE_IFREG))) {
      return not_a_bundle(bundle, absl::StrCat("entry '", name, "' is outside perf.data, .debug, ",
                                               kSymfsDir, " and ", kBundleManifest));
    }
    if (api.entry_hardlink(e) != nullptr ||
        (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)) {
      return not_a_bundle(
          bundle, absl::StrCat("entry '", name, "' is not a file, directory or symbolic link"));
    }
    if (type == AE_IFLNK) {
      const char* target = api.entry_symlink(e);
      if (target == nullptr || !link_stays_inside(name, target)) {
        return not_a_bundle(bundle, absl::StrCat("link '", name, "' points outside the bundle"));
      }
    }
    if (name == "perf.data" || name.starts_with("perf.data/")) has_recording = true;
    // Files as private as the recording; directories searchable, as perf's cache makes them.
    api.entry_set_perm(e, type == AE_IFDIR ? 0755 : (api.entry_perm(e) & 0700) | 0600);
    api.entry_set_pathname(e, absl::StrCat(root, "/", name).c_str());
    if (api.write_header(disk.get(), e) != ARCHIVE_OK) {
      return absl::InternalError(
          absl::StrCat("cannot unpack '", name, "': ", api.error_string(disk.get())));
    }
    if (type == AE_IFREG) {
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      int d = ARCHIVE_OK;
      while ((d = api.read_data_block(in.get(), &block, &size, &offset)) == ARCHIVE_OK) {
        if (api.write_data_block(disk.get(), block, size, offset) != ARCHIVE_OK) {
          return absl::InternalError(
              absl::StrCat("cannot unpack '", name, "': ", api.error_string(disk.get())));
        }
      }
      if (d != ARCHIVE_EOF) return not_a_bundle(bundle, api.error_string(in.get()));
    }
    if (api.write_finish_entry(disk.get()) != ARCHIVE_OK) {
      return absl::InternalError(
          absl::StrCat("cannot unpack '", name, "': ", api.error_string(disk.get())));
    }
    if (only != nullptr) only->erase(name);
  }
  if (!has_recording && only == nullptr) return not_a_bundle(bundle, "it holds no perf.data");
  return absl::OkStatus();
}

// The text of the JSON file `name` of an unpacked bundle at `root`; nullopt when it has none.
absl::StatusOr<std::optional<std::string>> read_json_file(const std::string& root,
                                                          const std::string& name) {
  const std::string path = absl::StrCat(root, "/", name);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::nullopt;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)) || fs::file_size(path, ec) > (1 << 26)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is not a file of JSON"));
  }
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The bundle's manifest (an empty one for a bundle without).
absl::StatusOr<BundleManifest> read_manifest(const std::string& root) {
  auto text = read_json_file(root, kBundleManifest);
  if (!text.ok()) return text.status();
  if (!*text) return BundleManifest{};
  return parse_bundle_manifest(**text);
}

// What the manifest of `bundle`, unpacked at `root`, says earlier bundles of its chain hold,
// unpacked there from each of them, found beside it.
absl::Status extract_elsewhere(const LibArchive& api, const std::string& bundle,
                               const BundleManifest& manifest, const std::string& root) {
  for (const auto& [sibling, names] : manifest.elsewhere) {
    if (bundle == "-") {
      return absl::InvalidArgumentError(absl::StrCat(
          "<stdin>: ", names.size(), " of its files are in the bundle ", sibling,
          " of its chain, which is looked for beside the bundle: give the bundle as a file"));
    }
    const std::string path = (fs::path(bundle).parent_path() / sibling).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      return absl::NotFoundError(
          absl::StrCat(bundle, ": ", names.size(), " of its files are in the bundle ", sibling,
                       " of its chain, which is not beside it (", path, ")"));
    }
    std::set<std::string> wanted(names.begin(), names.end());
    if (absl::Status s = extract(api, path, root, &wanted); !s.ok()) return s;
    if (!wanted.empty()) {
      return absl::NotFoundError(absl::StrCat(bundle, ": ", path, " lacks ", wanted.size(),
                                              " of the files it is said to hold, ", *wanted.begin(),
                                              " first"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SymfsLayout> read_symfs(const std::string& root) {
  auto text = read_json_file(root, kSymfsManifest);
  if (!text.ok()) return text.status();
  if (!*text) return SymfsLayout{};
  return parse_symfs_manifest(**text);
}

BundleWriter::BundleWriter(std::unique_ptr<io::Output> out, const LibArchive& api)
    : out_(std::move(out)), sink_(std::make_unique<BundleSink>(BundleSink{out_.get(), api})) {}

BundleWriter::~BundleWriter() {
  if (tar_ != nullptr) sink_->api.write_free(tar_);
}

absl::StatusOr<std::unique_ptr<BundleWriter>> BundleWriter::create(const std::string& path,
                                                                   int zstd_level) {
  auto api = load_libarchive();
  if (!api.ok()) return api.status();
  auto out = io::Output::create(path, io::Output::Mode::kStreaming);
  if (!out.ok()) return out.status();
  std::unique_ptr<BundleWriter> w(new BundleWriter(std::move(*out), *api));
  const LibArchive& a = *api;
  w->tar_ = a.write_new();
  const std::string level = std::to_string(zstd_level);
  // zstd's workers (ZSTD_c_nbWorkers) on every core: compressing is most of a bundle's time.
  const std::string threads = std::to_string(std::max(1U, std::thread::hardware_concurrency()));
  if (a.write_add_filter_zstd(w->tar_) != ARCHIVE_OK ||
      a.write_set_filter_option(w->tar_, "zstd", "compression-level", level.c_str()) !=
          ARCHIVE_OK ||
      a.write_set_filter_option(w->tar_, "zstd", "threads", threads.c_str()) != ARCHIVE_OK ||
      a.write_set_format_pax_restricted(w->tar_) != ARCHIVE_OK ||
      a.write_set_bytes_in_last_block(w->tar_, 1) != ARCHIVE_OK ||
      a.write_open2(w->tar_, w->sink_.get(), nullptr, write_to_output, nullptr, nullptr) !=
          ARCHIVE_OK) {
    return w->error("cannot start the bundle");
  }
  return w;
}

absl::Status BundleWriter::error(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", sink_->api.error_string(tar_)));
}

absl::Status BundleWriter::add_file(const std::string& name, const FileImage& image,
                                    unsigned mode) {
  const LibArchive& api = sink_->api;
  Entry e(api.entry_new(), {api.entry_free});
  api.entry_set_pathname(e.get(), name.c_str());
  api.entry_set_filetype(e.get(), AE_IFREG);
  api.entry_set_perm(e.get(), mode);
  api.entry_set_size(e.get(), static_cast<la_int64_t>(image.size));
  api.entry_set_mtime(e.get(), std::time(nullptr), 0);
  if (image.sparse()) {
    // Regions of whole 512-byte blocks (the holes' edges are zeros): GNU tar reads libarchive's
    // sparse entries only so.
    constexpr uint64_t kBlock = 512;
    std::vector<std::pair<uint64_t, uint64_t>> regions;
    for (const Piece& p : image.pieces) {
      const uint64_t begin = p.offset / kBlock * kBlock;
      const uint64_t end =
          std::min(image.size, (p.offset + p.bytes.size() + kBlock - 1) / kBlock * kBlock);
      if (!regions.empty() && begin <= regions.back().second) {
        regions.back().second = std::max(regions.back().second, end);
      } else {
        regions.emplace_back(begin, end);
      }
    }
    for (const auto& [begin, end] : regions) {
      api.entry_sparse_add_entry(e.get(), static_cast<la_int64_t>(begin),
                                 static_cast<la_int64_t>(end - begin));
    }
  }
  if (api.write_header(tar_, e.get()) != ARCHIVE_OK) return error("cannot add " + name);
  // libarchive takes the whole file, holes included, and stores what its sparse map names.
  static constexpr std::array<uint8_t, 1 << 16> kZeros{};
  constexpr size_t kChunk = size_t{1} << 20;
  const auto write = [&](const uint8_t* bytes, size_t n) {
    return api.write_data(tar_, bytes, n) == static_cast<la_ssize_t>(n);
  };
  uint64_t at = 0;
  for (const Piece& p : image.pieces) {
    for (; at < p.offset; at += std::min<uint64_t>(kZeros.size(), p.offset - at)) {
      if (!write(kZeros.data(), std::min<uint64_t>(kZeros.size(), p.offset - at))) {
        return error("cannot add " + name);
      }
    }
    for (size_t done = 0; done < p.bytes.size(); done += kChunk) {
      const std::span<const uint8_t> part =
          p.bytes.subspan(done, std::min(kChunk, p.bytes.size() - done));
      if (!write(part.data(), part.size())) {
        return error("cannot add " + name);
      }
      drop_pages(image.mapping, part);
    }
    at = p.offset + p.bytes.size();
  }
  for (; at < image.size; at += std::min<uint64_t>(kZeros.size(), image.size - at)) {
    if (!write(kZeros.data(), std::min<uint64_t>(kZeros.size(), image.size - at))) {
      return error("cannot add " + name);
    }
  }
  return absl::OkStatus();
}

absl::Status BundleWriter::add_symlink(const std::string& name, const std::string& target) {
  const LibArchive& api = sink_->api;
  Entry e(api.entry_new(), {api.entry_free});
  api.entry_set_pathname(e.get(), name.c_str());
  api.entry_set_filetype(e.get(), AE_IFLNK);
  api.entry_set_perm(e.get(), 0777);
  api.entry_set_symlink(e.get(), target.c_str());
  api.entry_set_mtime(e.get(), std::time(nullptr), 0);
  if (api.write_header(tar_, e.get()) != ARCHIVE_OK) return error("cannot add " + name);
  return absl::OkStatus();
}

absl::Status BundleWriter::commit() {
  if (sink_->api.write_close(tar_) != ARCHIVE_OK) return error("cannot finish the bundle");
  return out_->commit();
}

absl::StatusOr<Unpacked> unpack_bundle(const std::string& bundle, const std::string& dir,
                                       const UnpackOptions& options) {
  std::error_code ec;
  const auto status = fs::symlink_status(dir, ec);
  const bool exists = fs::exists(status);
  if (exists && (!fs::is_directory(status) || !fs::is_empty(dir, ec))) {
    return absl::AlreadyExistsError(
        absl::StrCat(dir, " exists and is not an empty directory: give a new one"));
  }
  fs::path target = fs::absolute(dir, ec).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::create_directories(target.parent_path(), ec);
  // libarchive refuses to write through any symbolic link on the way (the guard that keeps a
  // bundle's own links from leading out): the way to DIR is given without links.
  target = fs::weakly_canonical(target.parent_path(), ec) / target.filename();
  std::string temp = absl::StrCat(target.string(), ".pdfix-XXXXXX");
  if (::mkdtemp(temp.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a directory beside ", dir, ": ", std::strerror(errno)));
  }
  Unpacked result;
  auto api = load_libarchive();
  if (!api.ok()) return api.status();
  absl::Status s = extract(*api, bundle, temp);
  std::optional<BundleManifest> manifest;
  if (s.ok()) {
    auto read = read_manifest(temp);
    if (read.ok()) {
      manifest = *std::move(read);
      s = extract_elsewhere(*api, bundle, *manifest, temp);
    } else {
      s = read.status();
    }
  }
  if (s.ok()) {
    for (const auto& [sibling, names] : manifest->elsewhere) {
      result.elsewhere.emplace_back(sibling, names.size());
    }
    result.slim = std::move(manifest->slim);
    result.unwind_tables = manifest->unwind_tables;
    result.binaries = entries_of(temp + "/.debug").size();
    result.cache = target.string() + "/.debug";
    if (!options.merge_cache.empty()) {
      auto merged = merge_into(temp + "/.debug", options.merge_cache);
      if (merged.ok()) {
        result.added = merged->second;
        result.cache = options.merge_cache;
      } else {
        s = merged.status();
      }
    }
  }
  std::optional<format::BuildId> kernel;
  if (s.ok()) {
    auto symfs = read_symfs(temp);
    if (symfs.ok()) {
      for (SymfsRoot& root : symfs->roots) {
        root.dir = absl::StrCat(target.string(), "/", root.dir);
        result.symfs.push_back(std::move(root));
      }
      kernel = symfs->kernel;
    } else {
      s = symfs.status();
    }
  }
  if (s.ok()) {
    // An empty directory is replaced by rename(2); a new name must stay new until then.
    const int r =
        exists ? ::rename(temp.c_str(), target.c_str())
               : ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE);
    if (r != 0) {
      s = absl::InternalError(absl::StrCat("cannot rename to ", dir, ": ", std::strerror(errno)));
    }
  }
  if (!s.ok()) {
    fs::remove_all(temp, ec);
    return s;
  }
  result.recording = target.string() + "/perf.data";
  if (kernel) {
    const std::string kallsyms = cached_file(result.cache, *kernel, EntryKind::kKallsyms);
    if (fs::is_regular_file(kallsyms, ec)) result.kallsyms = kallsyms;
  }
  return result;
}

}  // namespace pdfix::store
