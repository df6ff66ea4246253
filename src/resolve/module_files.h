// Finding a kernel module's file for a module map: by the map's path under a copy of the
// recording host's root, or by module name in a directory of modules; proven, where the
// recording names the module's build-ids, by carrying one of them (resolve::carries_build_id).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "format/build_id.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pdfix::resolve {

using format::BuildId;

class ModuleFiles {
 public:
  // `sysroot`: a copy of the recording host's root, or empty; `modules_dir`: a directory searched
  // recursively for NAME.ko[.gz|.xz|.zst], or empty. `osrelease` names the recording's
  // /lib/modules/<release> under the sysroot.
  ModuleFiles(std::string sysroot, std::string modules_dir, std::string osrelease);

  struct Found {
    std::string path;
    std::unique_ptr<llvm::MemoryBuffer> image;  // decompressed
  };
  // The file for a module map named `map_filename` ("/lib/.../name.ko.xz" or "[name]"), which
  // carries one of `ids` (what the recording says the module's build-id is; empty: nothing
  // says). A name that two different files answer to finds nothing: a guess is worse than no
  // evidence; and a module file of another build is no evidence of this one.
  std::optional<Found> find(std::string_view map_filename, std::span<const BuildId> ids);

 private:
  void index(const std::string& dir);

  std::string sysroot_;
  std::string modules_dir_;
  std::string osrelease_;
  bool indexed_ = false;
  absl::flat_hash_map<std::string, std::string> by_name_;  // "" when ambiguous
};

}  // namespace pdfix::resolve
