#include "profile/preloader.h"

#include <utility>

namespace pdfix::profile {

Preloader::Preloader(Symbolizer& symbolizer)
    : symbolizer_(symbolizer), thread_([this] { run(); }) {}

Preloader::~Preloader() { finish(); }

void Preloader::add(const Mapping& m) {
  std::optional<Symbolizer::Readable> r = symbolizer_.to_read(m);
  if (!r) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(*std::move(r));
  }
  wake_.notify_one();
}

void Preloader::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Preloader::run() {
  for (;;) {
    Symbolizer::Readable r;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      r = std::move(queue_.front());
      queue_.pop_front();
    }
    symbolizer_.read(r);
  }
}

}  // namespace pdfix::profile
