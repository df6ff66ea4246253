#include "resolve/kernel_files.h"

#include "absl/strings/str_cat.h"

namespace pdfix::resolve {

std::vector<std::string> vmlinux_paths(std::string_view release) {
  const std::string r(release);
  return {absl::StrCat("/usr/lib/debug/boot/vmlinux-", r),
          absl::StrCat("/usr/lib/debug", modules_dir(r), "/vmlinux"),
          absl::StrCat("/boot/vmlinux-", r), absl::StrCat(modules_dir(r), "/build/vmlinux")};
}

std::string modules_dir(std::string_view release) {
  return absl::StrCat("/lib/modules/", std::string(release));
}

}  // namespace pdfix::resolve
