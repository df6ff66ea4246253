// Finding a kernel module's file for a module map, at the finder's places for a copy named by
// build-id (resolve::CopyPlaces, the run's resolver's): by the map's path under each of
// resolve::copy_roots (--sysroot or this host's root, then each --search root); by build-id in the
// build-id caches (resolve::in_caches); by module name in a directory of modules and in each root's
// modules directory for the recording's kernel release (resolve::modules_dir). Proven, where the
// recording names the module's build-ids, by carrying one of them (resolve::carries_build_id);
// without them, only a file of the recording host's own (under --sysroot, or --modules-dir) counts.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "format/build_id.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/find_copy.h"

namespace pdfix::resolve {

using format::BuildId;

class ModuleFiles {
 public:
  // `places`: the sysroot (a copy of the recording host's root, or empty), the --search roots and
  // the build-id caches; `modules_dir`: a directory searched recursively for NAME.ko[.gz|.xz|.zst],
  // or empty. `osrelease` names the recording's kernel release, whose modules directory is
  // indexed under each root.
  ModuleFiles(CopyPlaces places, std::string modules_dir, std::string osrelease);

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
  // A module file by name, and whether it counts only by carrying an id the recording names (one
  // under a --search root, which may be a container's or a chroot's).
  struct Named {
    std::string path;  // "" when ambiguous
    bool needs_id = false;
  };
  void index(const std::string& dir, bool needs_id);
  // The module file at `path`, if it carries one of `ids`; with none, only if it need not.
  std::optional<Found> proven(const std::string& path, bool needs_id,
                              std::span<const BuildId> ids) const;

  CopyPlaces places_;
  std::string modules_dir_;
  std::string osrelease_;
  bool indexed_ = false;
  absl::flat_hash_map<std::string, Named> by_name_;
};

}  // namespace pdfix::resolve
