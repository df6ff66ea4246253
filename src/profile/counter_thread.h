// A StackCounter (profile/stack_counter.h) on a thread of its own. Ordering a million samples in
// time and looking up their stacks costs about as much as reading and decoding them: the tap
// decodes into batches and hands each over, and reads the next records while the thread counts
// the last ones. A few batches are in flight at most, their buffers used again in turn: the
// memory is that of the batches (3.4 MB at most: nine, each 128 KB of events and 256 KB of
// words), whatever the recording's size.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>
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

  // The words of the next event are appended here, and add() takes them all (and empties it).
  std::vector<uint64_t>& words() { return event_; }
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
  static_assert(sizeof(Op) == 32 && std::is_trivially_copyable_v<Op>);
  static constexpr size_t kOpWords = sizeof(Op) / sizeof(uint64_t);
  // Allocated whole, and its pages had at once (io::prefault): the nine batches were a thousand
  // page faults as they grew, a tenth of the reading thread's time. Written with streaming stores
  // (io/streaming_store.h), the Ops as words too: the counting thread's core read these lines
  // last, and taking each back before writing it cost the reading thread a fifth of its time.
  struct Batch {
    static Batch allocated();
    std::unique_ptr<uint64_t[]> ops;  // kOpWords each
    size_t op_count = 0;
    std::unique_ptr<uint64_t[]> words;
    size_t word_count = 0;
  };
  void push(const Op& op);
  void hand_over();
  void tell();
  void run();

  // A batch is handed over when its Ops are all used or the next event's words do not fit (a
  // record's are at most 64 KiB, a u16 size: they always fit a batch of their own).
  static constexpr size_t kOpsPerBatch = 4096;
  static constexpr size_t kWordsPerBatch = size_t{1} << 15;
  static_assert(kWordsPerBatch > (size_t{64} << 10) / sizeof(uint64_t) + 1);
  // Eight rather than three, and the spare batches taken oldest first: the reading thread then
  // never waits, and writes into memory the counting thread's core no longer holds (dense's
  // --no-symbols export 271 -> 243 ms; oldest first alone, at eight, 255 -> 233 ms).
  static constexpr size_t kInFlight = 8;

  StackCounter counter_;
  std::function<void(uint32_t)> first_;
  std::function<void(std::span<const Frame>)> frames_;
  Batch filling_;
  std::vector<uint64_t> event_;  // the next event's words, in this core's cache
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
