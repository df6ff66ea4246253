#include "profile/namer.h"

#include <utility>

namespace pdfix::profile {

Namer::Namer(Symbolizer& symbolizer) : symbolizer_(symbolizer), thread_([this] { run(); }) {}

Namer::~Namer() { finish(); }

void Namer::add(uint64_t mapping, const Mapping& m) {
  Symbolizer::Binary* binary = symbolizer_.binary_to_name(m);
  if (binary == nullptr) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({.mapping = mapping, .target = {binary, m.start, m.offset}});
  }
  wake_.notify_one();
}

void Namer::name(std::span<const Frame> frames) {
  if (frames.empty()) return;  // an empty Work is a mapping's target
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({.frames = std::vector<Frame>(frames.begin(), frames.end())});
  }
  wake_.notify_one();
}

NamedFrames Namer::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  return std::exchange(named_, {});
}

void Namer::run() {
  for (;;) {
    Work w;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      w = std::move(queue_.front());
      queue_.pop_front();
    }
    if (w.frames.empty()) {
      targets_[w.mapping] = w.target;
      continue;
    }
    for (const Frame& f : w.frames) {
      const auto target = targets_.find(f.mapping);
      if (target == targets_.end()) continue;
      auto [it, added] = named_.try_emplace(f);
      if (!added) continue;
      const Target& t = target->second;
      it->second = symbolizer_.lines_in(*t.binary, t.start, t.offset, f.address, f.caller);
    }
  }
}

}  // namespace pdfix::profile
