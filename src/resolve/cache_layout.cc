#include "resolve/cache_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pdfix::resolve {
namespace {

const char* file_name(EntryKind kind) {
  switch (kind) {
    case EntryKind::kKallsyms:
      return "kallsyms";
    case EntryKind::kVdso:
      return "vdso";
    case EntryKind::kDebug:
      return "debug";
    case EntryKind::kVmlinux:
      return "vmlinux";
    case EntryKind::kElf:
      break;
  }
  return "elf";
}

std::string link_of(const format::BuildId& id) {
  const std::string hex = id.hex();
  return absl::StrCat(kBuildIdLinks, "/", hex.substr(0, 2), "/", hex.substr(2));
}

}  // namespace

std::string distribution_debug_file(const format::BuildId& id) {
  return absl::StrCat("/usr/lib/debug/", link_of(id), ".debug");
}

std::optional<CacheEntry> cache_entry(std::string_view name, const format::BuildId& id,
                                      EntryKind kind) {
  while (name.starts_with('/')) name.remove_prefix(1);
  if (name.empty() || id.size < 2) return std::nullopt;
  for (absl::string_view part : absl::StrSplit(absl::string_view(name.data(), name.size()), '/')) {
    if (part.empty() || part == "." || part == "..") return std::nullopt;
  }
  CacheEntry e;
  e.dir = absl::StrCat(std::string(name), "/", id.hex());
  e.file = absl::StrCat(e.dir, "/", file_name(kind));
  e.link = link_of(id);
  e.link_target = absl::StrCat("../../", e.dir);
  return e;
}

std::string cached_file(const std::string& cache, const format::BuildId& id, EntryKind kind) {
  return absl::StrCat(cache, "/", link_of(id), "/", file_name(kind));
}

EntryKind entry_kind_of(std::string_view name) {
  if (name.starts_with("[kernel.kallsyms]")) return EntryKind::kKallsyms;
  if (name == "[vdso]") return EntryKind::kVdso;
  return EntryKind::kElf;
}

}  // namespace pdfix::resolve
