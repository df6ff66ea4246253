#include "format/map_kind.h"

#include <algorithm>
#include <initializer_list>

namespace pdfix::format {
namespace {

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view p) { return s.starts_with(p); });
}

}  // namespace

MapKind classify(std::string_view filename, uint16_t misc) {
  if (starts_with_any(filename, {"[kernel.kallsyms]", "[guest.kernel.kallsyms"})) {
    return MapKind::kKernel;
  }
  if (filename == "[vdso]") return MapKind::kVdso;
  if (is_kernel_mode(misc)) return MapKind::kModule;
  if (filename.empty() || filename.front() != '/' ||
      starts_with_any(filename, {"//anon", "/dev/", "/SYSV", "/memfd:", "/anon_hugepage"})) {
    return MapKind::kAnonymous;
  }
  return MapKind::kFile;
}

bool may_carry_build_id(MapKind kind) { return kind != MapKind::kAnonymous; }

bool is_anonymous_code(std::string_view filename, uint16_t misc) {
  return classify(filename, misc) == MapKind::kAnonymous && !is_kernel_mode(misc) &&
         (misc & kMiscMmapData) == 0 && starts_with_any(filename, {"//anon", "[anon:", "/memfd:"});
}

std::string module_name(std::string_view filename) {
  std::string_view base = filename;
  if (base.starts_with("[") && base.ends_with("]")) {
    base = base.substr(1, base.size() - 2);
  } else {
    base = base.substr(base.rfind('/') + 1);
    for (std::string_view suffix : {".gz", ".xz", ".zst"}) {
      if (base.ends_with(suffix)) base.remove_suffix(suffix.size());
    }
    if (base.ends_with(".ko")) base.remove_suffix(3);
  }
  std::string name(base);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

bool looks_like_module_file(std::string_view filename) {
  for (std::string_view suffix : {".ko", ".ko.gz", ".ko.xz", ".ko.zst"}) {
    if (filename.ends_with(suffix)) return true;
  }
  return false;
}

}  // namespace pdfix::format
