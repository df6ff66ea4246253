#include "resolve/module_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "format/map_kind.h"
#include "resolve/elf_build_id.h"

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

std::optional<ModuleFiles::Found> ModuleFiles::find(std::string_view map_filename,
                                                    std::span<const BuildId> ids) {
  std::optional<std::string> path;
  // The roots that stand for the recording host's: the sysroot, else the --search roots, which may
  // be a container's or a chroot's: a module there counts only by carrying an id the recording
  // names.
  const bool by_sysroot = !places_.sysroot.empty();
  const std::vector<std::string> roots = by_sysroot ? std::vector{places_.sysroot} : places_.search;
  if (map_filename.starts_with("/") && (by_sysroot || !ids.empty())) {
    for (const std::string& root : roots) {
      if (std::string p = root + std::string(map_filename); !path && is_regular_file(p)) path = p;
    }
  }
  for (const BuildId& id : ids) {
    for (const std::string& cache : places_.caches) {
      if (!path && cache_holds(cache, id, EntryKind::kElf)) {
        path = cached_file(cache, id, EntryKind::kElf);
      }
    }
  }
  if (!path) {
    if (!indexed_) {
      indexed_ = true;
      if (!modules_dir_.empty()) index(modules_dir_, false);
      for (const std::string& root : roots) {
        if (!osrelease_.empty()) index(root + "/lib/modules/" + osrelease_, !by_sysroot);
      }
    }
    auto it = by_name_.find(format::module_name(map_filename));
    if (it == by_name_.end() || it->second.path.empty() || (it->second.needs_id && ids.empty())) {
      return std::nullopt;
    }
    path = it->second.path;
  }
  auto image = read_maybe_compressed(*path);
  if (!image.ok()) return std::nullopt;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>((*image)->getBufferStart()),
                                       (*image)->getBufferSize());
  if (!ids.empty() && std::none_of(ids.begin(), ids.end(), [&](const BuildId& id) {
        return carries_build_id(bytes, id);
      })) {
    return std::nullopt;
  }
  return Found{*std::move(path), *std::move(image)};
}

}  // namespace pdfix::resolve
