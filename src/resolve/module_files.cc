#include "resolve/module_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "format/map_kind.h"
#include "resolve/elf_build_id.h"
#include "resolve/kernel_files.h"

namespace pdfix::resolve {
namespace {

bool is_module_file(std::string_view name) {
  for (std::string_view suffix : {".ko", ".ko.gz", ".ko.xz", ".ko.zst"}) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

bool is_regular_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

ModuleFiles::ModuleFiles(CopyPlaces places, std::string modules_dir, std::string osrelease)
    : places_(std::move(places)),
      modules_dir_(std::move(modules_dir)),
      osrelease_(std::move(osrelease)) {}

void ModuleFiles::index(const std::string& dir, bool needs_id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    if (!is_module_file(path) || !it->is_regular_file(ec)) continue;
    auto [slot, added] = by_name_.try_emplace(format::module_name(path), Named{path, needs_id});
    Named& named = slot->second;
    if (added || named.path.empty() || named.path == path) continue;
    // foo.ko next to foo.ko.xz is one module packed two ways; the same name in two directories
    // is two modules.
    if (fs::path(named.path).parent_path() == it->path().parent_path()) {
      named.path = std::min(named.path, path);
    } else {
      named.path.clear();
    }
    named.needs_id = named.needs_id || needs_id;
  }
}

std::optional<ModuleFiles::Found> ModuleFiles::proven(const std::string& path, bool needs_id,
                                                      std::span<const BuildId> ids) const {
  if ((needs_id && ids.empty()) || !is_regular_file(path)) return std::nullopt;
  auto image = read_maybe_compressed(path);
  if (!image.ok()) return std::nullopt;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>((*image)->getBufferStart()),
                                       (*image)->getBufferSize());
  if (!ids.empty() && std::none_of(ids.begin(), ids.end(), [&](const BuildId& id) {
        return carries_build_id(bytes, id);
      })) {
    return std::nullopt;
  }
  return Found{path, *std::move(image)};
}

std::optional<ModuleFiles::Found> ModuleFiles::find(std::string_view map_filename,
                                                    std::span<const BuildId> ids) {
  // The finder's roots for a copy. Only the sysroot stands for the recording host's own: a module
  // under any other (this host's, which may run another kernel; a --search root, which may be a
  // container's or a chroot's) counts only by carrying an id the recording names.
  const std::vector<Place> roots = copy_roots(places_.sysroot, places_.search);
  const auto needs_id = [](const Place& root) { return root.kind != PlaceKind::kSysroot; };
  if (map_filename.starts_with("/")) {
    for (const Place& root : roots) {
      if (auto f = proven(root.root + std::string(map_filename), needs_id(root), ids)) return f;
    }
  }
  for (const BuildId& id : ids) {
    if (auto cached = in_caches(places_.caches, id, EntryKind::kElf)) {
      if (auto f = proven(*cached, true, ids)) return f;
    }
  }
  if (!indexed_) {
    indexed_ = true;
    if (!modules_dir_.empty()) index(modules_dir_, false);
    for (const Place& root : roots) {
      if (!osrelease_.empty()) index(root.root + modules_dir(osrelease_), needs_id(root));
    }
  }
  auto it = by_name_.find(format::module_name(map_filename));
  if (it == by_name_.end() || it->second.path.empty()) return std::nullopt;
  return proven(it->second.path, it->second.needs_id, ids);
}

}  // namespace pdfix::resolve
