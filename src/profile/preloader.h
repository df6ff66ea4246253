// The binaries a profile's frames lie in, read by LLVM's symbolizer on a thread of its own while
// the recording is still being read: their symbols and debug information (decompressed, for a
// distribution's debug files) are then read by the time the frames are named. The caller finds
// each binary (Symbolizer::to_read, which asks the host, as the rest of its thread does) and
// queues it; the thread only reads (Symbolizer::read). The caller asks nothing else of the
// Symbolizer until finish() returns.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "profile/stacks.h"
#include "profile/symbolizer.h"

namespace pdfix::profile {

class Preloader {
 public:
  explicit Preloader(Symbolizer& symbolizer);
  ~Preloader();  // finish()es
  Preloader(const Preloader&) = delete;
  Preloader& operator=(const Preloader&) = delete;

  // Finds `m`'s binary and queues it for reading.
  void add(const Mapping& m);
  // Waits until every binary queued is read and the thread has ended.
  void finish();

 private:
  void run();

  Symbolizer& symbolizer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Symbolizer::Readable> queue_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace pdfix::profile
