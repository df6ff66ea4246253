// A profile's frames named while the recording is still being read: LLVM's symbolizer reads each
// binary's symbols and debug information (decompressed, for a distribution's debug files) and
// names each frame of it on a thread of its own, from the first stack that holds the frame, so
// that little is left to name once the recording is read. The caller finds each binary
// (Symbolizer::binary_to_name, which asks the host, as the rest of its thread does) and hands
// over the frames; the thread only names (Symbolizer::lines_in). The caller asks nothing of the
// Symbolizer's LLVM half until finish() returns. One thread, not one a core: on two cores a
// second one slowed the reading more than it named (export of three recordings 5-10% slower).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "profile/stacks.h"
#include "profile/symbolizer.h"

namespace pdfix::profile {

class Namer {
 public:
  explicit Namer(Symbolizer& symbolizer);
  ~Namer();  // finish()es
  Namer(const Namer&) = delete;
  Namer& operator=(const Namer&) = delete;

  // Finds the binary of `m`, mapping number `mapping` (an index into Profile::mappings plus
  // one), whose frames are then named as they come.
  void add(uint64_t mapping, const Mapping& m);
  // Frames to name, each once; those of a mapping not added (the kernel, a binary not here) are
  // left to whoever asks the Symbolizer later.
  void name(std::span<const Frame> frames);
  // Waits until every frame handed over is named and the thread has ended: the names.
  NamedFrames finish();

 private:
  // Where a mapping lies and the binary it names from.
  struct Target {
    Symbolizer::Binary* binary = nullptr;
    uint64_t start = 0;
    uint64_t offset = 0;
  };
  // What the thread is handed, in order: a mapping's target (no frames), or frames.
  struct Work {
    uint64_t mapping = 0;
    Target target;
    std::vector<Frame> frames;
  };
  void run();

  Symbolizer& symbolizer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Work> queue_;
  bool done_ = false;
  // The thread's own until it ends.
  absl::flat_hash_map<uint64_t, Target> targets_;
  NamedFrames named_;
  std::thread thread_;
};

}  // namespace pdfix::profile
