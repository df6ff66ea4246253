// What find_binaries found for a binary, remembered for the next recording of the same run: the
// chunks of `pdfix follow` name the same hundred binaries again and again, and looking for each
// one's copy and debug file (its .gnu_debuglink read from the whole ELF) is most of what keeping a
// chunk's binaries costs. A finding is used again only while every file it names is unchanged
// (device, inode, size, mtime, ctime): the copy still carries the id it was proven by, the debug
// file still is the one found. A copy that was not found is looked for again each time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "format/build_id.h"
#include "resolve/file_places.h"
#include "resolve/find_copy.h"

namespace pdfix::store {

class FindMemory {
 public:
  struct Found {
    resolve::Copy copy;                  // a kFile copy, whose path carries the id
    std::optional<resolve::Copy> debug;  // its debug file; none found when empty
  };
  // The key of a binary: its name, id and the mapped inode when a record gave one.
  static std::string key(const std::string& name, const format::BuildId& id,
                         const std::optional<resolve::Inode>& inode);
  // What was found for `key`, if its files are unchanged since.
  std::optional<Found> recall(const std::string& key) const;
  // Remembers a copy found in a file (others are not: they cost nothing to find again).
  void remember(const std::string& key, Found found);
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Found found;
    resolve::FileStamp copy;
    std::optional<resolve::FileStamp> debug;
  };
  absl::flat_hash_map<std::string, Entry> entries_;
};

}  // namespace pdfix::store
