// A progress bar on stderr for long work, shown only when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace pdfix::cli {

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // nullptr-like (empty) when stderr is not a terminal, so callers can pass it on unconditionally.
  std::function<void(uint64_t, uint64_t)> callback();

 private:
  void update(uint64_t done, uint64_t total);
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace pdfix::cli
