#include "resolve/resolver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "resolve/cache_adds.h"
#include "resolve/elf_build_id.h"
#include "resolve/find_copy.h"

namespace pdfix::resolve {

using format::MapKind;

namespace {

// The map's path itself, on this machine.
Place at_path() { return {"", PlaceKind::kPath, "file"}; }

// Why a file has no id, said once.
constexpr char kNoBuildIdInFile[] =
    "no GNU build-id in the file (Go writes none by default; newer Go: -ldflags=-B=gobuildid)";

// The map's inode, when its record gave one (an MMAP2 without a build-id).
std::optional<Inode> inode_of(const MapQuery& q) {
  return q.has_inode ? std::optional(Inode{q.maj, q.min, q.ino}) : std::nullopt;
}

}  // namespace

Resolver::Resolver(ResolverConfig config, const Host& host)
    : config_(std::move(config)), host_(host) {}

const Resolution& Resolver::resolve(const MapQuery& q, const RecordingFacts& facts) {
  facts_ = facts;
  // One file is opened and parsed once, however many maps name it; a file-backed map is keyed by
  // its inode as well, so a replaced binary is looked at again.
  std::string key = absl::StrCat(q.filename, "\n", q.misc & format::kCpuModeMask, "\n",
                                 format::machine_of(q.misc, q.pid), "\n", q.has_inode, ":", q.maj,
                                 ":", q.min, ":", q.ino);
  // Which vdso a map is depends on its length (see vdso()).
  if (format::classify(q.filename, q.misc) == MapKind::kVdso) absl::StrAppend(&key, ":", q.len);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, resolve_uncached(q)).first;
  return it->second;
}

std::set<std::pair<std::string, std::string>> Resolver::unproven_table_ids() const {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& e : unproven_table_ids_) {
    if (!proving_table_ids_.contains(e)) out.insert(e);
  }
  return out;
}

Resolution Resolver::resolve_uncached(const MapQuery& q) {
  const MapKind kind = format::classify(q.filename, q.misc);
  if (format::is_guest_mode(q.misc) && kind != MapKind::kAnonymous) {
    // This machine's files, notes, vdso and cache are the host's: a guest's file of the same name
    // is another file. Only what the recording says of the guest itself proves its maps.
    if (auto r = from_known_or_table(q, kind)) return *r;
    return {std::nullopt, "", "a guest's map, not in the guest's build-id table"};
  }
  switch (kind) {
    case MapKind::kAnonymous:
      return {.reason = "anonymous", .absence = Resolution::Absence::kAnonymous};
    case MapKind::kKernel:
      return kernel_image(q);
    case MapKind::kModule:
      return kernel_module(q);
    case MapKind::kVdso:
      return vdso(q);
    case MapKind::kFile:
      return user_file(q);
  }
  return {};
}

std::optional<Resolution> Resolver::from_known(const MapQuery& q, MapKind kind) const {
  const bool guest = format::is_guest_mode(q.misc);
  const std::string name = kind == MapKind::kKernel
                               ? (guest ? "[guest.kernel.kallsyms]" : "[kernel.kallsyms]")
                               : q.filename;
  // The names a user gives are the host's, but for the guest kernel's own tag.
  if (!guest || kind == MapKind::kKernel) {
    if (auto it = config_.known.find(name); it != config_.known.end()) {
      return Resolution{it->second, "--known-build-ids", ""};
    }
  }
  if (kind == MapKind::kModule && !guest) {
    if (auto it = config_.known.find(absl::StrCat("[", format::module_name(q.filename), "]"));
        it != config_.known.end()) {
      return Resolution{it->second, "--known-build-ids", ""};
    }
  }
  return std::nullopt;
}

std::optional<Resolution> Resolver::from_known_or_table(const MapQuery& q, MapKind kind) const {
  if (auto known = from_known(q, kind)) return known;
  const bool guest = format::is_guest_mode(q.misc);
  const std::string name = kind == MapKind::kKernel
                               ? (guest ? "[guest.kernel.kallsyms]" : "[kernel.kallsyms]")
                               : q.filename;
  // The table may name a file twice with different ids (a binary upgraded mid-run): then it
  // cannot tell which one this map is. Each machine's entries speak for its maps alone.
  const uint64_t machine = format::machine_of(q.misc, q.pid);
  std::optional<BuildId> found;
  for (const auto& e : facts_.table) {
    if (format::machine_of(e.misc, static_cast<uint32_t>(e.pid)) != machine) continue;
    bool match = e.filename == name ||
                 (kind == MapKind::kKernel && guest && format::is_kernel_tag(e.filename));
    if (!match && kind == MapKind::kModule && format::is_kernel_mode(e.misc)) {
      match = format::module_name(e.filename) == format::module_name(q.filename);
    }
    if (!match) continue;
    auto id = e.build_id();
    if (!id) continue;
    if (found && !(*found == *id)) return Resolution{std::nullopt, "", "ambiguous build-id table"};
    found = id;
  }
  if (found) return Resolution{found, "build-id table", ""};
  return std::nullopt;
}

std::vector<BuildId> Resolver::table_ids(const MapQuery& q) const {
  const uint64_t machine = format::machine_of(q.misc, q.pid);
  std::vector<BuildId> ids;
  for (const auto& e : facts_.table) {
    if (format::machine_of(e.misc, static_cast<uint32_t>(e.pid)) != machine ||
        e.filename != q.filename) {
      continue;
    }
    auto id = e.build_id();
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return ids;
}

HostIdentity Resolver::identity() const {
  return HostIdentity({facts_.hostname, facts_.osrelease, facts_.kernel_text, facts_.table},
                      facts_.started_at, host_);
}

CopyPlaces Resolver::copy_places(std::optional<int64_t> ended_at) const {
  CopyPlaces places{.sysroot = config_.sysroot,
                    .search = config_.search,
                    .ended_at = ended_at,
                    .debuginfod_client_cache = host_.debuginfod_client_cache()};
  if (!config_.buildid_dir.empty()) places.caches.push_back(config_.buildid_dir);
  return places;
}

void Resolver::vouch(const std::string& path, const BuildId& id) {
  proving_table_ids_.insert({path, id.hex()});
}

Resolution Resolver::user_file(const MapQuery& q) {
  if (auto known = from_known(q, MapKind::kFile)) return *known;
  const bool deleted = q.filename.ends_with(" (deleted)");
  const std::pair<uint64_t, std::string> path{format::machine_of(q.misc, q.pid), q.filename};
  const Inode inode{q.maj, q.min, q.ino};
  if (q.has_inode) seen_[path].insert(inode);
  // On the host and boot that recorded, a file that is the mapped inode proves the map, whatever
  // the table says of its path: the table gives ids by path, and one path may name several files.
  const bool inodes_prove = q.has_inode && config_.sysroot.empty() && identity().same_host();
  Resolution found;
  if (inodes_prove && !deleted) {
    found = by_inode(q);
    if (found.id) {
      proving_table_ids_.insert({q.filename, found.id->hex()});
      // perf may have filed this host's file's id for it, read at the path.
      for (const BuildId& id : table_ids(q)) {
        if (!(id == *found.id) && id_is_host_files_not_the_mapped(q, id)) {
          unproven_table_ids_.insert({q.filename, id.hex()});
        }
      }
    }
    if (found.id || !found.not_the_mapped) return found;
  }
  std::string why;
  const std::vector<BuildId> listed = table_ids(q);
  if (q.has_inode && !inodes_prove && config_.sysroot.empty() && !listed.empty()) {
    // perf read the table's id at the path, in whatever root it could enter: off the host and
    // boot that recorded, no inode ties it to this map (a chroot's map gets the host's id so).
    // It stays in the table, where perf reads it as before; pdfix does not vouch for it.
    return {std::nullopt, "",
            absl::StrCat("not proven here (", identity().elsewhere().value_or(""),
                         "): the build-id table's id stays in the table, not copied into the map; "
                         "give --sysroot")};
  }
  if (listed.size() == 1) {
    why = q.has_inode ? table_id_not_this_maps(q, listed.front(), inodes_prove).value_or("") : "";
    if (why.empty()) {
      if (inodes_prove) proving_table_ids_.insert({q.filename, listed.front().hex()});
      return {listed.front(), "build-id table", ""};
    }
  } else if (listed.size() > 1) {
    why = inodes_prove ? "the build-id table names several files at this path and none here is "
                         "this map's inode (a container's or chroot's?): give its root or layers "
                         "with --search"
                       : "ambiguous build-id table";
  }
  if (deleted) return {std::nullopt, "", why.empty() ? "deleted" : why};
  if (!inodes_prove) {
    if (!why.empty()) return {std::nullopt, "", why};
    found = config_.sysroot.empty() ? from_file(q.filename, q, /*live=*/true)
                                    : from_file(config_.sysroot + q.filename, q, false);
    if (found.id || !found.not_the_mapped) return found;
  }
  // A file that is gone, or another one now, may have left the id it had in the cache.
  if (auto cached = from_buildid_cache(q.filename)) {
    // perf filled its cache from this host's path too: for a chroot's or a container's map that
    // is another file's id.
    if (cached->id && q.has_inode && table_id_not_this_maps(q, *cached->id, inodes_prove)) {
      return {std::nullopt, "",
              "the build-id cache's entry may be another file's at that path, not the one mapped "
              "(a container's or chroot's: give its root or layers with --search)"};
    }
    if (cached->id || found.absence == Resolution::Absence::kNoFile) return *cached;
  }
  return {std::nullopt, "", why.empty() ? found.reason : why};
}

Resolution Resolver::by_inode(const MapQuery& q) {
  const std::pair<uint64_t, std::string> path{format::machine_of(q.misc, q.pid), q.filename};
  const Inode inode{q.maj, q.min, q.ino};
  if (q.pid == 0) {
    if (auto it = inode_ids_.find({path, inode}); it != inode_ids_.end()) {
      return it->second ? Resolution{it->second, "an earlier map of the inode", ""}
                        : Resolution{std::nullopt, "", "not proven", true};
    }
  }
  Resolution at_path;
  // Every candidate that is the mapped inode, with a build-id or without one.
  std::vector<Resolution> proven;
  for (const Place& place : places(host_, inode, q.pid, config_.search, facts_.ended_at)) {
    Resolution c = place.kind == PlaceKind::kPath ? from_file(q.filename, q, /*live=*/true)
                                                  : from_place(place, q);
    if (!c.file.empty()) proven.push_back(c);
    if (place.kind == PlaceKind::kPath) at_path = std::move(c);
  }
  const auto hex = [](const Resolution& r) { return r.id ? r.id->hex() : "no build-id"; };
  for (const Resolution& c : proven) {
    if (c.id != proven.front().id) {
      return {std::nullopt, "",
              absl::StrCat("candidates disagree (", proven.front().source, ": ",
                           hex(proven.front()), ", ", c.source, ": ", hex(c), ")")};
    }
  }
  if (!proven.empty()) {
    inode_ids_[{path, inode}] = proven.front().id;
    return proven.front();
  }
  if (q.pid != 0) inode_ids_.try_emplace({path, inode}, std::nullopt);
  return at_path;
}

std::optional<std::string> Resolver::table_id_not_this_maps(const MapQuery& q, const BuildId& id,
                                                            bool inodes_prove) {
  if (inodes_prove && id_is_host_files_not_the_mapped(q, id)) {
    unproven_table_ids_.insert({q.filename, id.hex()});
    return "the build-id table's id is this host's file at that path, not the one mapped (a "
           "container's or chroot's?): give its root or layers with --search";
  }
  const std::pair<uint64_t, std::string> path{format::machine_of(q.misc, q.pid), q.filename};
  const PathInodes* whole = facts_.inodes ? facts_.inodes() : nullptr;
  const PathInodes& mapped = whole != nullptr ? *whole : seen_;
  std::set<Inode> others;
  if (auto it = mapped.find(path); it != mapped.end()) others = it->second;
  others.erase(Inode{q.maj, q.min, q.ino});
  // The table's id is the file's of one of them: this map's only if every other one is proven
  // to be a file with another id.
  for (const Inode& other : others) {
    if (!inodes_prove) {
      return absl::StrCat("the build-id table gives one id for a path the recording maps from ",
                          others.size() + 1, " files, and inodes prove nothing off the host (",
                          identity().elsewhere().value_or("files are read under --sysroot"), ")");
    }
    MapQuery that = q;
    that.maj = other.maj;
    that.min = other.min;
    that.ino = other.ino;
    that.pid = 0;
    const Resolution r = by_inode(that);
    if (!r.id || *r.id == id) {
      return "the build-id table's id may be another file's at that path (the recording maps "
             "several): give this map's root or layers with --search";
    }
  }
  return std::nullopt;
}

Resolution Resolver::from_file(const std::string& path, const MapQuery& q, bool live) {
  // On this machine a path proves nothing by itself: the file must be the very inode that was
  // mapped, and must not have changed since the recording began. A sysroot's file is a copy,
  // proven by its id.
  const Sighting seen =
      live ? match(host_, path, at_path(), inode_of(q), facts_.started_at, facts_.ended_at)
           : match(host_, path, at_path(), std::nullopt, std::nullopt, std::nullopt);
  if (seen == Match::kMissing) {
    return {.reason = "not found", .not_the_mapped = true, .absence = Resolution::Absence::kNoFile};
  }
  if (const std::optional<std::string> why = live ? identity().elsewhere() : std::nullopt) {
    return {std::nullopt, "", absl::StrCat("not proven here (", *why, "); give --sysroot")};
  }
  switch (seen.verdict) {
    case Match::kMissing:
    case Match::kTheMapped:
    case Match::kNoInode:
      break;
    case Match::kAnotherInode:
      return {std::nullopt, "", why_not_the_mapped(seen), true};
    case Match::kStale:
      return {std::nullopt, "", "stale (modified after the recording began)", true};
  }
  auto id = config_.ids != nullptr ? config_.ids->id_of(path) : build_id_of_file(path);
  if (absl::IsInvalidArgument(id.status())) return {std::nullopt, "", "not ELF"};
  if (!id.ok()) return {std::nullopt, "", std::string(id.status().message())};
  // Only a live file checked against the map's inode is proven; a sysroot's is proven by its id.
  const std::string proven = live && q.has_inode ? path : "";
  if (!id->has_value()) {
    if (proven.empty()) {
      return {.reason = absl::StrCat(kNoBuildIdInFile,
                                     "; kept only when proven by inode on the recording's host"),
              .absence = Resolution::Absence::kNoBuildIdInFile};
    }
    return {.source = "file",
            .reason = kNoBuildIdInFile,
            .file = proven,
            .absence = Resolution::Absence::kNoBuildIdInFile};
  }
  return {*id, live ? "file" : "sysroot", "", false, proven};
}

std::string Resolver::why_not_the_mapped(const Sighting& seen) const {
  // A file replaced in place (a package upgrade renames a new file over the old) is a new inode
  // on the same filesystem, made since the recording began.
  if (seen.same_device && facts_.started_at && seen.changed_at >= *facts_.started_at) {
    return "replaced (this host's file at that path is a new inode, made since the recording "
           "began)";
  }
  if (seen.same_device && !facts_.started_at) {
    return "this host's file at that path is another inode (replaced, or a chroot's file: give "
           "its root with --search)";
  }
  return "another file than this host's at that path (a container or chroot?): give its root or "
         "layers with --search";
}

Resolution Resolver::from_place(const Place& place, const MapQuery& q) {
  const std::string path = place.root + q.filename;
  const Sighting seen = match(host_, path, place, inode_of(q), facts_.started_at, facts_.ended_at);
  if (seen.verdict != Match::kTheMapped) {
    return {.reason = std::string(name(seen.verdict)),
            .absence = seen == Match::kMissing ? Resolution::Absence::kNoFile
                                               : Resolution::Absence::kOther};
  }
  auto id = config_.ids != nullptr ? config_.ids->id_of(path) : build_id_of_file(path);
  if (!id.ok()) return {std::nullopt, "", "not ELF"};
  if (!id->has_value()) {
    return {.source = place.source,
            .reason = kNoBuildIdInFile,
            .file = path,
            .absence = Resolution::Absence::kNoBuildIdInFile};
  }
  return {*id, place.source, "", false, path};
}

bool Resolver::id_is_host_files_not_the_mapped(const MapQuery& q, const BuildId& id) {
  if (!config_.sysroot.empty() || !q.has_inode || !identity().same_host()) return false;
  return match(host_, q.filename, at_path(), inode_of(q), std::nullopt, std::nullopt) ==
             Match::kAnotherInode &&
         carries_build_id(q.filename, id);
}

std::optional<Resolution> Resolver::from_buildid_cache(const std::string& filename) const {
  if (config_.buildid_dir.empty()) return std::nullopt;
  const std::vector<CacheAdd> adds = cache_adds(config_.buildid_dir, filename);
  if (adds.empty()) return std::nullopt;
  const bool span_known = identity().same_host() && facts_.started_at && facts_.ended_at;
  const auto in_span = [&](int64_t t) {
    return span_known && t >= *facts_.started_at && t <= *facts_.ended_at;
  };
  // perf read the file at the path when it added it: a file made or rewritten there while the
  // recording went on may be another build than one mapped before (a linker rewrites its output
  // in place between two runs), and the entry perf added then is the later one.
  const Sighting now = match(host_, filename, at_path(), std::nullopt, std::nullopt, std::nullopt);
  if (now != Match::kMissing && in_span(now.changed_at)) {
    return Resolution{std::nullopt, "",
                      "the file at this path changed while the recording went on: the build-id "
                      "cache's entry may be another build's than the one mapped"};
  }
  std::optional<BuildId> proven;
  size_t added_in_span = 0;
  for (const CacheAdd& add : adds) {
    if (add.added_at && in_span(*add.added_at)) {
      ++added_in_span;
      proven = add.id;
    }
  }
  if (added_in_span == 1) return Resolution{proven, "build-id cache, added while recording", ""};
  return Resolution{std::nullopt, "",
                    added_in_span > 1 ? "build-id cache has several ids added while recording"
                                      : "candidate from the build-id cache, not proven (not added "
                                        "while this recording was made)"};
}

}  // namespace pdfix::resolve
