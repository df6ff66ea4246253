// Finding a kernel module's file for a module map: by the map's path under a copy of the
// recording host's root, or by module name in a directory of modules.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"

namespace pdfix::resolve {

class ModuleFiles {
 public:
  // `sysroot`: a copy of the recording host's root, or empty; `modules_dir`: a directory searched
  // recursively for NAME.ko[.gz|.xz|.zst], or empty. `osrelease` names the recording's
  // /lib/modules/<release> under the sysroot.
  ModuleFiles(std::string sysroot, std::string modules_dir, std::string osrelease);

  // The file for a module map named `map_filename` ("/lib/.../name.ko.xz" or "[name]"). A name
  // that two different files answer to finds nothing: a guess is worse than no evidence.
  std::optional<std::string> find(std::string_view map_filename);

 private:
  void index(const std::string& dir);

  std::string sysroot_;
  std::string modules_dir_;
  std::string osrelease_;
  bool indexed_ = false;
  absl::flat_hash_map<std::string, std::string> by_name_;  // "" when ambiguous
};

}  // namespace pdfix::resolve
