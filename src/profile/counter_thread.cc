#include "profile/counter_thread.h"

#include <array>
#include <cstring>
#include <span>
#include <utility>

#include "io/huge_pages.h"
#include "io/streaming_store.h"

namespace pdfix::profile {

CounterThread::Batch CounterThread::Batch::allocated() {
  Batch b;
  b.ops = std::make_unique_for_overwrite<uint64_t[]>(kOpsPerBatch * kOpWords);
  b.words = std::make_unique_for_overwrite<uint64_t[]>(kWordsPerBatch);
  io::prefault(b.ops.get(), kOpsPerBatch * kOpWords * sizeof(uint64_t));
  io::prefault(b.words.get(), kWordsPerBatch * sizeof(uint64_t));
  return b;
}

CounterThread::CounterThread(Labels labels, std::function<void(uint32_t)> first,
                             std::function<void(std::span<const Frame>)> frames)
    : counter_(labels),
      first_(std::move(first)),
      frames_(std::move(frames)),
      filling_(Batch::allocated()),
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
  if (time) event_.push_back(*time);
  if (filling_.word_count + event_.size() > kWordsPerBatch) hand_over();
  io::stream_words(filling_.words.get() + filling_.word_count, event_.data(), event_.size());
  filling_.word_count += event_.size();
  const auto words = static_cast<uint32_t>(event_.size());
  event_.clear();
  push({.event = e, .words = words, .what = time ? Op::What::kAddTimed : Op::What::kAdd});
}

void CounterThread::round() { push({.what = Op::What::kRound}); }

void CounterThread::push(const Op& op) {
  std::array<uint64_t, kOpWords> words{};
  std::memcpy(words.data(), &op, sizeof(Op));
  io::stream_words(filling_.ops.get() + filling_.op_count * kOpWords, words.data(), kOpWords);
  if (++filling_.op_count == kOpsPerBatch) hand_over();
}

void CounterThread::hand_over() {
  io::stream_fence();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return in_flight_ < kInFlight; });
    ++in_flight_;
    full_.push_back(std::move(filling_));
    if (spare_.empty()) {
      filling_ = Batch::allocated();
    } else {
      // The one the counter let go of longest ago: the lines of the last it read are still in
      // its core's cache, and each write here would first take them back from there.
      filling_ = std::move(spare_.front());
      spare_.pop_front();
    }
  }
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
    if (filling_.op_count != 0) hand_over();
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
    const std::span<const uint64_t> words(batch.words.get(), batch.word_count);
    size_t at = 0;
    for (size_t i = 0; i < batch.op_count; ++i) {
      Op op;
      std::memcpy(static_cast<void*>(&op), batch.ops.get() + i * kOpWords, sizeof(Op));
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
    batch.op_count = 0;
    batch.word_count = 0;
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
