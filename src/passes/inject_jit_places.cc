// Where inject-jit reads a process's JIT files: its jitdump where the marker map's file is proven
// (resolve::places and resolve::match), its map file at the places of the process's own files, and
// copies in --jit-dir.
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/inject_jit.h"
#include "resolve/file_places.h"
#include "resolve/host_identity.h"

namespace pdfix::passes {
namespace {

std::string base_of(std::string_view path) { return std::string(path.substr(path.rfind('/') + 1)); }

}  // namespace

// A process's files, its /tmp and its pid are this host's only for a recording of this host as it
// runs now (resolve::HostIdentity): a recording of the previous boot would otherwise read the map
// file of an unrelated process of this boot that has the same pid.
bool InjectJit::recorded_here(const transform::Session& s) const {
  return resolve::HostIdentity(recorded_place(s), common_.recording_started_at, *common_.host)
      .same_host();
}

std::vector<jit::FileCandidate> InjectJit::dump_candidates(
    const JitMarker& marker, uint32_t pid, const transform::Session& s,
    std::vector<std::string>& problems) const {
  const std::string& path = marker.filename;
  std::vector<jit::FileCandidate> where;
  if (!common_.sysroot.empty()) {
    where.push_back({common_.sysroot + path, false});
  } else if (recorded_here(s)) {
    const resolve::Inode& inode = marker.inode;
    for (const resolve::Place& place :
         resolve::places(*common_.host, inode, pid, common_.search, common_.recording_ended_at)) {
      const std::string file = place.root + path;
      if (!marker.has_inode) {
        where.push_back({file, false});
        continue;
      }
      // The runtime appends to its dump while it runs, after the recording too: written since
      // is no sign of another file.
      const resolve::Match match =
          resolve::match(*common_.host, file, place, inode, std::nullopt, std::nullopt).verdict;
      if (match == resolve::Match::kTheMapped) {
        where.push_back({file, true});
      } else if (match != resolve::Match::kMissing) {
        problems.push_back(file + " is another file (not the inode mapped)");
      }
    }
  } else {
    for (const std::string& root : common_.search) where.push_back({root + path, false});
  }
  for (const std::string& dir : config_.jit_dirs) {
    where.push_back({dir + "/" + base_of(path), false});
  }
  return where;
}

std::vector<jit::FileCandidate> InjectJit::map_candidates(uint32_t pid, const transform::Session& s,
                                                          std::string& files_on) const {
  const std::string path = absl::StrCat("/tmp/perf-", pid, ".map");
  std::vector<jit::FileCandidate> where;
  // A map file is the recording's only on the recording's host, and only if written to since the
  // recording began (`recorded`). It is where the process wrote it: in /tmp of its own root, by
  // the pid it had in its own namespace. That root is seen at the places of the process's files
  // (the host; its container's overlay while mounted, and the overlay's layers; its root while it
  // lives; each --search root), and the pid is known while it lives, from its jitdump's name, or
  // else taken to be the host's (a process of the host's pid namespace).
  if (!common_.sysroot.empty()) {
    where.push_back({common_.sysroot + path, true});
  } else if (recorded_here(s)) {
    const auto process = resolve::recorded_process(*common_.host, pid, common_.recording_ended_at);
    const auto overlay = [&](const resolve::Inode& i) {
      auto m = common_.host->mount(i.maj, i.min);
      return m && m->type == "overlay" ? m : std::nullopt;
    };
    std::optional<resolve::Inode> file;
    if (const auto* m = timeline_.lowest(pid)) file = mapped_files_[m->file];
    // The whole recording is swept only for what the records so far have not told, and only
    // when a file could lead somewhere: to an overlay mounted here. The records so far are in
    // file order, not perf's: a CPU's whole buffer of a round comes before the next CPU's, and
    // a process's fork may come after its exec and maps, giving it its parent's files (a
    // container's process those of runc, on the host's disk); a process's files may come after
    // its code (perf lists a running process's maps by address).
    const MapSurvey* survey =
        common_.survey && !(file && overlay(*file)) && !common_.host->overlays().empty()
            ? common_.survey->get()
            : nullptr;
    if (survey != nullptr) {
      if (auto it = survey->process_files().find(pid); it != survey->process_files().end()) {
        if (!file || overlay(it->second)) file = it->second;
      }
    }
    if (file) {
      const auto on = overlay(*file);
      files_on = absl::StrCat(
          file->maj, ":", file->min, " inode ", file->ino,
          on ? ", on the overlay mounted at " + on->point : ", on no overlay mounted here");
    }
    uint32_t own_pid = pid;
    if (process) {
      own_pid = process->ns_pid;
    } else if (auto dump = dumps_.find(image_of(pid)); dump != dumps_.end()) {
      own_pid = dump->second.named_pid;
    }
    for (const resolve::Place& place :
         resolve::places(*common_.host, file.value_or(resolve::Inode{}), pid, common_.search,
                         common_.recording_ended_at)) {
      const uint32_t named = place.kind == resolve::PlaceKind::kPath ? pid : own_pid;
      where.push_back({absl::StrCat(place.root, "/tmp/perf-", named, ".map"), true});
    }
  }
  for (const std::string& dir : config_.jit_dirs) {
    where.push_back({dir + "/" + base_of(path), false});
  }
  return where;
}

}  // namespace pdfix::passes
