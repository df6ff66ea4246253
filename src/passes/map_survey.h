// The repair passes' analysis of the whole recording (transform/analysis.h), made on demand.
// Which inodes a recording maps at each path: perf's build-id table gives ids by path, and whether
// its one id for a path can be a map's depends on how many files the recording maps there, before
// and after that map. Which processes map a jitdump, and when: records come per CPU, so an
// anonymous code map that perf applies after a dump's marker (by time) may come before it in the
// file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "resolve/resolver.h"
#include "transform/analysis.h"

namespace pdfix::passes {

// The first map of a process's jitdump (jit-PID.dump), as its record gives it.
struct JitMarker {
  std::string filename;
  bool has_inode = false;  // an MMAP2 with device and inode
  resolve::Inode inode;
  std::optional<uint64_t> time;
};

class MapSurvey : public transform::Analysis {
 public:
  std::bitset<128> wanted() const override;
  void see(const transform::RecordRef& r, transform::Session& s) override;

  const resolve::PathInodes& inodes() const { return inodes_; }
  // By pid.
  const std::map<uint32_t, JitMarker>& jit_markers() const { return jit_markers_; }
  // By pid: the first file a process maps by device and inode, which names its root's filesystem
  // (a container's overlay) for files it leaves unmapped (its perf-PID.map).
  const std::map<uint32_t, resolve::Inode>& process_files() const { return process_files_; }

 private:
  resolve::PathInodes inodes_;
  std::map<uint32_t, JitMarker> jit_markers_;
  std::map<uint32_t, resolve::Inode> process_files_;
};

using OnDemandSurvey = transform::OnDemand<MapSurvey>;

}  // namespace pdfix::passes
