// A profile's distinct frames, each named once: every writer (pprof, folded) asks here, so that
// an address has one name whatever the format, and each is symbolized once however many stacks
// hold it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "io/huge_pages.h"
#include "profile/stacks.h"
#include "profile/symbolizer.h"

namespace pdfix::profile {

// A frame of a stack: an address in a mapping (an index into Profile::mappings plus one; 0: none
// covered it), the leaf's own or a return address (`caller`).
struct Location {
  uint64_t mapping = 0;
  uint64_t address = 0;
  bool caller = false;
  std::vector<Line> lines;  // innermost inline frame first; empty: not named
};

class Locations {
 public:
  // With no symbolizer, addresses stay unnamed (export --no-symbols). A frame `named` holds is
  // named so (profile/namer.h: named while the recording was read); the rest by `symbolizer`.
  Locations(const Profile& profile, Symbolizer* symbolizer, NamedFrames named = {});

  // The locations of a stack's frames, leaf first, as indices into all(); until the next call.
  std::span<const uint32_t> of(std::span<const uint64_t> frames);
  const std::vector<Location>& all() const { return all_; }
  // How many of all() have names.
  uint64_t named() const { return named_; }

 private:
  const Profile& profile_;
  Symbolizer* symbolizer_;
  NamedFrames named_frames_;
  std::vector<Location> all_;
  std::vector<uint32_t> of_;  // the last of()'s
  // Filled after the recording is read, when nothing else runs: each page's first write was a
  // page fault, most of the time it took to number a profile's locations.
  absl::flat_hash_map<Frame, uint32_t, absl::Hash<Frame>, std::equal_to<>,
                      io::PrefaultingAllocator<std::pair<const Frame, uint32_t>>>
      index_;
  uint64_t named_ = 0;
};

// A stack's key (Profile::stacks): its event, its labels (each 0 when not asked for, else
// plus one), then its frames (two words each: stack_counter.h, frame_of).
inline uint64_t event_of(std::span<const uint64_t> key) { return key[0]; }
inline uint64_t comm_of(std::span<const uint64_t> key) { return key[1]; }
inline uint64_t pid_of(std::span<const uint64_t> key) { return key[2]; }
inline uint64_t tid_of(std::span<const uint64_t> key) { return key[3]; }
inline std::span<const uint64_t> frames_of(std::span<const uint64_t> key) { return key.subspan(4); }

}  // namespace pdfix::profile
