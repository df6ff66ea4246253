// A line of /proc/PID/mountinfo, as far as finding a map's file needs it: which filesystem a
// device number is, where it is mounted, and for an overlay the directories it is made of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdfix::resolve {

struct Mount {
  std::string type;   // "ext4", "overlay"
  std::string point;  // where it is mounted, as the reader of the table sees it
  // Mounted at `point` is this directory of the filesystem ("/": all of it; a bind mount shows a
  // subtree).
  std::string root;
  // An overlay's layers, top first: upperdir, then each lowerdir. A file it shows lives in one.
  std::vector<std::string> layers;
};

// The first mount of device maj:min in `table` (the text of a mountinfo file); nullopt when none.
std::optional<Mount> find_mount(std::string_view table, uint32_t maj, uint32_t min);

// Every overlay mounted whole (a container's root) in `table`, in its order.
std::vector<Mount> whole_overlays(std::string_view table);

}  // namespace pdfix::resolve
