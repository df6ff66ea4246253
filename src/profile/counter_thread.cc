#include "profile/counter_thread.h"

#include <span>
#include <utility>

#include "io/huge_pages.h"

namespace pdfix::profile {

CounterThread::Batch CounterThread::Batch::reserved() {
  Batch b;
  b.ops.reserve(kOpsPerBatch);
  b.words.reserve(kWordsReserved);
  io::prefault(b.ops.data(), b.ops.capacity() * sizeof(Op));
  io::prefault(b.words.data(), b.words.capacity() * sizeof(uint64_t));
  return b;
}

CounterThread::CounterThread(Labels labels, std::function<void(uint32_t)> first,
                             std::function<void(std::span<const Frame>)> frames)
    : counter_(labels),
      first_(std::move(first)),
      frames_(std::move(frames)),
      filling_(Batch::reserved()),
      thread_([this] { run(); }) {}

CounterThread::~CounterThread() {
  // Not finished (the recording failed): what waits is dropped, and nobody is told of it.
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    full_.clear();
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CounterThread::add(std::optional<uint64_t> time, const Event& e) {
  if (time) filling_.words.push_back(*time);
  const size_t words = filling_.words.size() - event_words_;
  event_words_ = filling_.words.size();
  push({.event = e,
        .words = static_cast<uint32_t>(words),
        .what = time ? Op::What::kAddTimed : Op::What::kAdd});
}

void CounterThread::round() { push({.what = Op::What::kRound}); }

void CounterThread::push(const Op& op) {
  filling_.ops.push_back(op);
  if (filling_.ops.size() >= kOpsPerBatch || filling_.words.size() >= kWordsPerBatch) hand_over();
}

void CounterThread::hand_over() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return in_flight_ < kInFlight; });
    ++in_flight_;
    full_.push_back(std::move(filling_));
    if (spare_.empty()) {
      filling_ = Batch::reserved();
    } else {
      // The one the counter let go of longest ago: the lines of the last it read are still in
      // its core's cache, and each write here would first take them back from there.
      filling_ = std::move(spare_.front());
      spare_.pop_front();
    }
  }
  event_words_ = 0;
  work_.notify_one();
  tell();
}

void CounterThread::tell() {
  std::vector<uint32_t> first;
  std::vector<Frame> frames;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    first.swap(first_sampled_);
    frames.swap(new_frames_);
  }
  if (first_) {
    for (const uint32_t m : first) first_(m);
  }
  if (frames_ && !frames.empty()) frames_(frames);
}

StackCounter& CounterThread::finish() {
  if (thread_.joinable()) {
    if (!filling_.ops.empty()) hand_over();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    work_.notify_one();
    thread_.join();
    counter_.finish();
    // After what the thread's last batches left untold (a batch is told of at the next hand-over,
    // and the last ones had none).
    const std::vector<uint32_t> last_first = counter_.take_first_sampled();
    const std::vector<Frame> last_frames = counter_.take_new_frames();
    first_sampled_.insert(first_sampled_.end(), last_first.begin(), last_first.end());
    new_frames_.insert(new_frames_.end(), last_frames.begin(), last_frames.end());
    tell();
  }
  return counter_;
}

void CounterThread::run() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return done_ || !full_.empty(); });
      if (full_.empty()) return;
      batch = std::move(full_.front());
      full_.pop_front();
    }
    const std::span<const uint64_t> words(batch.words);
    size_t at = 0;
    for (const Op& op : batch.ops) {
      switch (op.what) {
        case Op::What::kRound:
          counter_.round();
          break;
        case Op::What::kAdd:
        case Op::What::kAddTimed: {
          const bool timed = op.what == Op::What::kAddTimed;
          counter_.add(timed ? std::optional(words[at + op.words - 1]) : std::nullopt, op.event,
                       words.subspan(at, op.words - (timed ? 1 : 0)));
          at += op.words;
          break;
        }
      }
    }
    std::vector<uint32_t> first = counter_.take_first_sampled();
    std::vector<Frame> frames = counter_.take_new_frames();
    batch.ops.clear();
    batch.words.clear();
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      first_sampled_.insert(first_sampled_.end(), first.begin(), first.end());
      new_frames_.insert(new_frames_.end(), frames.begin(), frames.end());
      spare_.push_back(std::move(batch));
      --in_flight_;
    }
    room_.notify_one();
  }
}

}  // namespace pdfix::profile
