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

ModuleFiles::ModuleFiles(std::string sysroot, std::string modules_dir, std::string osrelease)
    : sysroot_(std::move(sysroot)),
      modules_dir_(std::move(modules_dir)),
      osrelease_(std::move(osrelease)) {}

void ModuleFiles::index(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    if (!is_module_file(path) || !it->is_regular_file(ec)) continue;
    auto [slot, added] = by_name_.try_emplace(format::module_name(path), path);
    if (added || slot->second.empty() || slot->second == path) continue;
    // foo.ko next to foo.ko.xz is one module packed two ways; the same name in two directories
    // is two modules.
    if (fs::path(slot->second).parent_path() == it->path().parent_path()) {
      slot->second = std::min(slot->second, path);
    } else {
      slot->second.clear();
    }
  }
}

std::optional<ModuleFiles::Found> ModuleFiles::find(std::string_view map_filename,
                                                    std::span<const BuildId> ids) {
  std::optional<std::string> path;
  if (!sysroot_.empty() && map_filename.starts_with("/")) {
    if (std::string p = sysroot_ + std::string(map_filename); is_regular_file(p)) path = p;
  }
  if (!path) {
    if (!indexed_) {
      indexed_ = true;
      if (!modules_dir_.empty()) index(modules_dir_);
      if (!sysroot_.empty() && !osrelease_.empty()) index(sysroot_ + "/lib/modules/" + osrelease_);
    }
    auto it = by_name_.find(format::module_name(map_filename));
    if (it == by_name_.end() || it->second.empty()) return std::nullopt;
    path = it->second;
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
