#include "resolve/id_memory.h"

#include "resolve/elf_build_id.h"
#include "resolve/file_places.h"

namespace pdfix::resolve {
namespace {

// Files of binaries a run has seen; past it (days of upgrades), the memory starts again.
constexpr size_t kMaxIds = 1 << 16;

}  // namespace

absl::StatusOr<std::optional<format::BuildId>> IdMemory::id_of(const std::string& path) {
  const std::optional<FileStamp> before = stamp_of(path);
  if (!before) return build_id_of_file(path);
  const Key key{before->dev, before->ino, before->size, before->mtime_ns, before->ctime_ns};
  if (const auto it = ids_.find(key); it != ids_.end()) return it->second;
  ++reads_;
  auto id = build_id_of_file(path);
  // Remembered only when the file did not change while it was read.
  if (id.ok() && stamp_of(path) == before) {
    if (ids_.size() >= kMaxIds) ids_.clear();
    ids_.emplace(key, *id);
  }
  return id;
}

}  // namespace pdfix::resolve
