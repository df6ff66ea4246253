// A StackCounter (profile/stack_counter.h) on a thread of its own. Ordering a million samples in
// time and looking up their stacks costs about as much as reading and decoding them: the tap
// decodes into batches and hands each over, and reads the next records while the thread counts
// the last ones. A few batches are in flight at most, their buffers used again in turn: the
// memory is that of the batches (5.8 MB at most: nine, each up to 128 KB of events and 512 KB of
// words), whatever the recording's size.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "profile/stack_counter.h"

namespace pdfix::profile {

class CounterThread {
 public:
  // Told on the thread that adds, a batch or so after the sample was added: `first` of each
  // mapping a sample's frame first lies in, then `frames` of the mapped frames of each stack
  // first counted (StackCounter::take_new_frames).
  CounterThread(Labels labels, std::function<void(uint32_t)> first,
                std::function<void(std::span<const Frame>)> frames);
  ~CounterThread();
  CounterThread(const CounterThread&) = delete;
  CounterThread& operator=(const CounterThread&) = delete;

  // The words of the next event are appended here, and add() takes all appended since the last
  // add(). The counter keeps where they begin: an add() may hand the batch over, and an index a
  // caller held across it would point into the next batch.
  std::vector<uint64_t>& words() { return filling_.words; }
  void add(std::optional<uint64_t> time, const Event& e);
  void round();
  // Everything added counted and the thread ended: the counter is then the caller's.
  StackCounter& finish();

 private:
  // Half a cache line: the reading thread writes one a sample, into memory the counting thread
  // read a few batches before. A timed event's time is the last of its words.
  struct Op {
    Event event;
    uint32_t words = 0;
    enum class What : uint8_t { kAdd, kAddTimed, kRound } what = What::kAdd;
  };
  static_assert(sizeof(Op) == 32);
  // Reserved whole, and its pages had at once (io::prefault): the nine batches were a thousand
  // page faults as they grew, a tenth of the reading thread's time.
  struct Batch {
    static Batch reserved();
    std::vector<Op> ops;
    std::vector<uint64_t> words;
  };
  void push(const Op& op);
  void hand_over();
  void tell();
  void run();

  static constexpr size_t kOpsPerBatch = 4096;
  static constexpr size_t kWordsPerBatch = size_t{1} << 15;
  // A batch is handed over once it holds kWordsPerBatch, so its last event may take it past them
  // by the words of one record (at most 64 KiB: a u16 size).
  static constexpr size_t kWordsReserved = kWordsPerBatch + (size_t{64} << 10) / sizeof(uint64_t);
  // Eight rather than three, and the spare batches taken oldest first: the reading thread then
  // never waits, and writes into memory the counting thread's core no longer holds (dense's
  // --no-symbols export 271 -> 243 ms; oldest first alone, at eight, 255 -> 233 ms).
  static constexpr size_t kInFlight = 8;

  StackCounter counter_;
  std::function<void(uint32_t)> first_;
  std::function<void(std::span<const Frame>)> frames_;
  Batch filling_;
  size_t event_words_ = 0;  // where in filling_.words the next event's words begin
  std::mutex mutex_;
  std::condition_variable work_;  // for the thread: a batch, or the end
  std::condition_variable room_;  // for the adder: fewer than kInFlight batches
  std::deque<Batch> full_;
  std::deque<Batch> spare_;
  size_t in_flight_ = 0;
  std::vector<uint32_t> first_sampled_;
  std::vector<Frame> new_frames_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace pdfix::profile
