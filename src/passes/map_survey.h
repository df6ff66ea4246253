// What a pass must know of the whole recording before it meets the records that tell it, read
// from the file once, when first asked for. Which inodes a recording maps at each path: perf's
// build-id table gives ids by path, and whether its one id for a path can be a map's depends on
// how many files the recording maps there, before and after that map. Which processes map a
// jitdump, and when: records come per CPU, so an anonymous code map that perf applies after a
// dump's marker (by time) may come before it in the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "io/input.h"
#include "resolve/resolver.h"

namespace pdfix::passes {

// The first map of a process's jitdump (jit-PID.dump), as its record gives it.
struct JitMarker {
  std::string filename;
  bool has_inode = false;  // an MMAP2 with device and inode
  resolve::Inode inode;
  std::optional<uint64_t> time;
};

class MapSurvey : public resolve::MappedInodes {
 public:
  // Over a mapped input, which it reads again on the first question; nullptr for a stream.
  static std::shared_ptr<const MapSurvey> of(io::Input& in);
  const resolve::PathInodes& all() const override;
  // By pid.
  const std::map<uint32_t, JitMarker>& jit_markers() const;

 private:
  explicit MapSurvey(io::Input& in) : in_(in) {}
  void read() const;

  io::Input& in_;
  mutable bool read_ = false;
  mutable resolve::PathInodes inodes_;
  mutable std::map<uint32_t, JitMarker> jit_markers_;
};

}  // namespace pdfix::passes
