// gzip on a thread of its own: a writer hands over the bytes it has encoded and goes on making the
// next, and they are compressed beside it. pprof's samples are most of a profile's bytes: their
// compression then takes no time of its own after the last one is made.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace pdfix::profile {

class GzipThread {
 public:
  GzipThread();
  ~GzipThread();
  GzipThread(const GzipThread&) = delete;
  GzipThread& operator=(const GzipThread&) = delete;

  // `bytes` appended to what is compressed, in the order written. Waits while kQueued writes
  // wait for the compressor: what is held is a few blocks, however large the profile.
  void write(std::string bytes);
  // Everything written, compressed (gzip, the fastest level) and the stream closed; empty when
  // the compressor failed. Once.
  std::string finish();

 private:
  void run();

  static constexpr size_t kQueued = 4;

  std::mutex mutex_;
  std::condition_variable work_;  // for the compressor: bytes, or the end
  std::condition_variable room_;  // for the writer: fewer than kQueued waiting
  std::deque<std::string> queued_;
  bool done_ = false;
  bool failed_ = false;
  std::string out_;
  std::thread thread_;
};

}  // namespace pdfix::profile
