// The maps of the recording's machines and processes, as the records lay them out when applied in
// time order (transform/time_order.h): "which map covers this address in this process now", with
// one set of rules for every consumer (hit counts, unwinding, JIT placement).
//
// The rules, the kernel's and perf's:
// - a new map replaces what it covers of older ones, keeping the parts on either side;
// - a thread shares its process's maps; a FORK of a new process copies its parent's (and
//   replaces whatever a reused pid had);
// - an exec (COMM with the exec bit) clears the process's maps: the new image maps anew;
// - kernel maps belong to their machine (the host, or a guest by its pid), not to a process;
//   a guest's user maps are not followed;
// - a zero-length kernel map (a module perf did not size) runs up to the next map, as perf's
//   maps__fixup_end makes it; a zero-length user map covers nothing;
// - a user-mode address no user map covers is looked up among the host kernel's maps when it
//   lies in the kernel's half, as perf does.
// An exited thread keeps its maps: samples of it may still come, and a new process of its pid
// comes with a FORK.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"

namespace pdfix::transform {

class ProcessTimeline {
 public:
  struct Map {
    uint64_t start = 0;
    uint64_t end = 0;  // exclusive; for a zero-length kernel map, as given (start)
    uint64_t pgoff = 0;
    uint32_t file = 0;  // the caller's handle for what is mapped
  };

  // The end of a map record's [start, start + len): the top of the address space for a length
  // that would wrap (old perfs wrote the kernel's so).
  static uint64_t end_of(uint64_t start, uint64_t len) {
    return start + len < start ? UINT64_MAX : start + len;
  }
  // A map record's map, of `misc`'s cpumode and `pid`. `kernel_start`, for the host kernel's own
  // map, is where the session says the kernel begins (transform::Session::kernel_start): what
  // tells kernel addresses from user ones.
  void map(uint16_t misc, uint32_t pid, const Map& m,
           std::optional<uint64_t> kernel_start = std::nullopt);
  void fork(uint32_t pid, uint32_t ppid);
  void exec(uint32_t pid);
  // The map covering `addr` for a sample (or callchain entry) of `cpumode` in `pid`; nullptr for
  // none.
  const Map* find(uint16_t cpumode, uint32_t pid, uint64_t addr) const;
  // The lowest of `pid`'s own user maps now (its parent's until it maps anew, none after an exec
  // until it maps again); nullptr for none.
  const Map* lowest(uint32_t pid) const;
  // Which image `pid` runs: a new one at each exec, and at the FORK of a new process under the
  // pid (a reused pid is another process); 0 before the recording shows either. What a consumer
  // keeps of a process (its jitdump, its map file) belongs to one image.
  uint64_t image(uint32_t pid) const;
  // A number that changes whenever what find() answers for `pid` may change (its maps, or a
  // kernel's): a consumer that looks up the same addresses again and again (a profile's stacks)
  // keeps its answers while it stays the same.
  uint64_t version(uint32_t pid) const;

 private:
  using Maps = std::map<uint64_t, Map>;  // by start; never overlapping
  static void insert(Maps& maps, Map m);
  static const Map* find_in(const Maps& maps, uint64_t addr);
  bool kernel_address(uint64_t addr) const;

  // A process's maps, copied only when it maps something while another process shares them: a
  // fork shares its parent's, and most children exec (which drops them) before they map anything.
  Maps& own_maps(uint32_t pid);

  absl::flat_hash_map<uint32_t, std::shared_ptr<Maps>> processes_;  // host user maps, by pid
  absl::flat_hash_map<uint64_t, Maps> kernels_;                     // by machine (format/machine.h)
  uint64_t kernel_start_ = 0;                       // the host kernel image's, once mapped
  absl::flat_hash_map<uint32_t, uint64_t> images_;  // by pid
  uint64_t images_begun_ = 0;
  // One counter for every change: a process's version is the later of its own last change and the
  // kernels' last, so that either moves it.
  uint64_t changes_ = 0;
  uint64_t kernels_changed_ = 0;
  absl::flat_hash_map<uint32_t, uint64_t> changed_;  // by pid
};

}  // namespace pdfix::transform
