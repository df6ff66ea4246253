// The build-ids a run read from files, remembered for its next recordings: the chunks of
// `pdfix follow` map the same hundred binaries again and again, and each one's id would be read
// from its ELF notes anew each chunk. Kept by the file's stamp (device, inode, size, mtime,
// ctime), which any write changes: an id is used again only for the very file it was read from,
// unchanged. Whether that file proves a map is not remembered: the resolver decides it for each
// recording, under its own time span (resolve::match), before asking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "format/build_id.h"

namespace pdfix::resolve {

class IdMemory {
 public:
  // The id of the file at `path` (none: an ELF file without one), read or remembered.
  absl::StatusOr<std::optional<format::BuildId>> id_of(const std::string& path);
  size_t size() const { return ids_.size(); }
  size_t reads() const { return reads_; }

 private:
  using Key = std::tuple<uint64_t, uint64_t, int64_t, int64_t, int64_t>;
  absl::flat_hash_map<Key, std::optional<format::BuildId>> ids_;
  size_t reads_ = 0;
};

}  // namespace pdfix::resolve
