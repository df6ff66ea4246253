#include "resolve/cache_adds.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>

#include "resolve/cache_layout.h"

namespace pdfix::resolve {

std::vector<CacheAdd> cache_adds(const std::string& cache, const std::string& path) {
  std::vector<CacheAdd> adds;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache + path, ec)) {
    std::optional<format::BuildId> id = format::BuildId::from_hex(e.path().filename().string());
    if (!id) continue;
    CacheAdd add{*id, std::nullopt};
    const std::optional<CacheEntry> entry = cache_entry(path, *id, EntryKind::kElf);
    const std::string link = entry ? cache + "/" + entry->link : "";
    struct stat st{};
    std::array<char, 4096> target{};
    const ssize_t n = entry ? ::readlink(link.c_str(), target.data(), target.size()) : -1;
    // The id's one link names the entry of the path perf read it at first: for another path it
    // says nothing of this one.
    if (n > 0 && std::string(target.data(), static_cast<size_t>(n)) == entry->link_target &&
        ::lstat(link.c_str(), &st) == 0 && (st.st_mtim.tv_sec != 0 || st.st_mtim.tv_nsec != 0)) {
      add.added_at = st.st_mtim.tv_sec * int64_t{1'000'000'000} + st.st_mtim.tv_nsec;
    }
    adds.push_back(add);
  }
  return adds;
}

}  // namespace pdfix::resolve
