#include "store/find_memory.h"

#include "absl/strings/str_cat.h"

namespace pdfix::store {

std::string FindMemory::key(const std::string& name, const format::BuildId& id,
                            const std::optional<resolve::Inode>& inode) {
  std::string k = absl::StrCat(name, "\n", id.hex());
  if (inode) absl::StrAppend(&k, "\n", inode->maj, ":", inode->min, ":", inode->ino);
  return k;
}

std::optional<FindMemory::Found> FindMemory::recall(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  if (resolve::stamp_of(e.found.copy.path) != e.copy) return std::nullopt;
  // A debug file found must be there as it was; none found stays none while the binary, whose
  // .gnu_debuglink named where to look, is unchanged.
  if (e.found.debug && resolve::stamp_of(e.found.debug->path) != e.debug) return std::nullopt;
  return e.found;
}

void FindMemory::remember(const std::string& key, Found found) {
  if (found.copy.from != resolve::Copy::From::kFile) return;
  const std::optional<resolve::FileStamp> copy = resolve::stamp_of(found.copy.path);
  if (!copy) return;
  std::optional<resolve::FileStamp> debug;
  if (found.debug) {
    debug = resolve::stamp_of(found.debug->path);
    if (!debug) return;
  }
  entries_.insert_or_assign(key, Entry{std::move(found), *copy, debug});
}

}  // namespace pdfix::store
