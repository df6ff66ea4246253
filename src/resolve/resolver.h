// Where a map record's build-id comes from, in order of trust (DESIGN.md §4): an id the user gave
// (--known-build-ids), the recording's own build-id table, the mapped file itself (under --sysroot
// or on this machine, only if it is provably the file that was mapped), perf's build-id cache, and
// for the kernel and its modules the running kernel's notes when the recording is of this boot.
// When in doubt there is no answer, and a reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "format/build_id.h"
#include "format/feature.h"
#include "format/map_kind.h"
#include "resolve/file_places.h"
#include "resolve/find_copy.h"
#include "resolve/host.h"
#include "resolve/host_identity.h"
#include "resolve/id_memory.h"

namespace pdfix::resolve {

using format::BuildId;

struct ResolverConfig {
  std::map<std::string, BuildId> known;  // by the name map records use
  std::string sysroot;                   // a copy of the recording host's root; empty: this machine
  std::string buildid_dir;               // perf's build-id cache (~/.debug); empty: none
  // More places a process's files may be seen from here (--search): a container's rootfs, a
  // chroot, an image layer. A file there proves a map only by being its inode.
  std::vector<std::string> search;
  // The ids a run of several recordings read from files (follow's chunks); null: read each time.
  IdMemory* ids = nullptr;
};

// What the recording says about where it was made. A view: in pipe mode it grows as the stream
// goes by, and is read afresh at each resolve().
// The files a recording maps at each path, by machine and path: one path may name several (the
// host's libc.so.6 and each container's), and perf's table gives ids by path alone.
using PathInodes = std::map<std::pair<uint64_t, std::string>, std::set<Inode>>;
struct RecordingFacts {
  std::string_view hostname;            // HOSTNAME feature: this machine's files count only here
  std::string_view osrelease;           // OSRELEASE feature
  std::optional<uint64_t> kernel_text;  // the host kernel map's pgoff: the KASLR base
  // When the recording's file was created and last written (nanoseconds since the epoch): the
  // time span in which perf record adds what it mapped to the build-id cache.
  std::optional<int64_t> started_at;
  std::optional<int64_t> ended_at;
  std::span<const format::BuildIdEntry> table;  // the build-id table and HEADER_BUILD_ID records
  // Every inode mapped in the whole recording, found when first called (an analysis of the file,
  // transform/analysis.h); unset, or nullptr from it: only those resolved so far are known (a
  // stream).
  std::function<const PathInodes*()> inodes;
};

struct MapQuery {
  std::string filename;
  uint16_t misc = 0;
  bool has_inode = false;  // an MMAP2 with dev/ino (not with a build-id)
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t len = 0;  // of the mapping
  uint32_t pid = 0;  // a guest's map: the guest machine's pid
};

struct Resolution {
  std::optional<BuildId> id;
  std::string source;  // where the id came from, or where the file was proven
  std::string reason;  // why there is none
  // There is no file at the path, or it is not the one mapped: perf's cache may hold what was.
  bool not_the_mapped = false;
  // A file on this machine proven by device and inode (on the host and boot that recorded) to be
  // the mapped one, unchanged since: set with `id`, and without it for a file that has no
  // build-id, which is then kept by path and content.
  std::string file;
  // Without an id, what callers decide by (`reason` says it in words, for people; no caller
  // reads it): memory with no file behind it, no file at the path, a file with no GNU build-id of
  // its own (proven, then `file` is set, or not), or another reason.
  enum class Absence { kOther, kAnonymous, kNoFile, kNoBuildIdInFile };
  Absence absence = Absence::kOther;
};

class Resolver {
 public:
  Resolver(ResolverConfig config, const Host& host);
  // The answer for one map, given what the recording has told so far. Answers are kept: a file is
  // read once, however many maps name it.
  const Resolution& resolve(const MapQuery& q, const RecordingFacts& facts);
  // The build-id table's (path, hex id) pairs that were another file's for every map of the path
  // resolved so far (see id_is_host_files_not_the_mapped): entries to take out of the table.
  std::set<std::pair<std::string, std::string>> unproven_table_ids() const;
  // A map record carries `id` for `path` already (a second run over fix's output): that table
  // entry is some map's, whatever this host's file at the path is.
  void vouch(const std::string& path, const BuildId& id);
  // Where this run looks for a copy of a binary named by build-id, and for its debug file
  // (resolve::copy_of, find_debug_file): the sysroot, search roots and build-id cache the maps
  // are resolved from, and libdebuginfod's client cache.
  CopyPlaces copy_places(std::optional<int64_t> ended_at) const;
  // perf's build-id cache this run resolves from, and where what a server sends is kept; empty:
  // none.
  const std::string& buildid_dir() const { return config_.buildid_dir; }

 private:
  Resolution resolve_uncached(const MapQuery& q);
  Resolution kernel_image(const MapQuery& q);
  Resolution kernel_module(const MapQuery& q);
  Resolution user_file(const MapQuery& q);
  Resolution vdso(const MapQuery& q);
  std::optional<Resolution> from_known(const MapQuery& q, format::MapKind kind) const;
  std::optional<Resolution> from_known_or_table(const MapQuery& q, format::MapKind kind) const;
  // The table's ids for a user file's path, on the map's machine.
  std::vector<BuildId> table_ids(const MapQuery& q) const;
  Resolution from_file(const std::string& path, const MapQuery& q, bool live);
  // Why this host's file at the path, `seen` so, is not the one mapped.
  std::string why_not_the_mapped(const Sighting& seen) const;
  // Every file this machine shows that is the map's inode, at each of resolve::places: all that
  // prove it must agree.
  Resolution by_inode(const MapQuery& q);
  // Why the table's only id for the map's path may be another inode's of those mapped there;
  // nullopt when it can only be this map's.
  std::optional<std::string> table_id_not_this_maps(const MapQuery& q, const BuildId& id,
                                                    bool by_inode);
  // The file at `place` + the map's path, if it is the inode that was mapped.
  Resolution from_place(const Place& place, const MapQuery& q);
  // perf reads a file's id (for its table and its cache) at the path, in its own root: when this
  // host's file there is not the mapped inode and has that id, the id is that file's, no evidence
  // for the map (a chroot's or a container's file, or one replaced during the run).
  bool id_is_host_files_not_the_mapped(const MapQuery& q, const BuildId& id);
  // perf's cache holds candidates, not proof: only an entry added while this recording was being
  // made (perf record adds every mapped file at its end) is the file that was mapped.
  std::optional<Resolution> from_buildid_cache(const std::string& filename) const;
  // The recording's identity against this host's (resolve/host_identity.h), for the facts of the
  // resolve() call under way.
  HostIdentity identity() const;

  ResolverConfig config_;
  const Host& host_;
  RecordingFacts facts_;  // those of the resolve() call under way
  // Node-based: passes keep pointers to resolutions while more are added.
  absl::node_hash_map<std::string, Resolution> cache_;
  std::set<std::pair<std::string, std::string>> unproven_table_ids_;
  std::set<std::pair<std::string, std::string>> proving_table_ids_;
  // Inodes of maps resolved so far, which stand for the whole recording's where there is no
  // analysis of it (a stream), and the ids their files proved (by machine and path).
  PathInodes seen_;
  std::map<std::pair<std::pair<uint64_t, std::string>, Inode>, std::optional<BuildId>> inode_ids_;
};

}  // namespace pdfix::resolve
