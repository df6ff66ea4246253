#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace pdfix::cli {
namespace {
// Short jobs finish before a bar would help; only draw once this much time has passed.
constexpr auto kQuietFor = std::chrono::milliseconds(500);
}  // namespace

Progress::Progress(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (drawn_) std::fputs("\r\033[K", stderr);
}

std::function<void(uint64_t, uint64_t)> Progress::callback() {
  if (!enabled_) return nullptr;
  return [this](uint64_t done, uint64_t total) { update(done, total); };
}

void Progress::update(uint64_t done, uint64_t total) {
  if (std::chrono::steady_clock::now() - start_ < kQuietFor) return;
  constexpr int kWidth = 30;
  const double mib = static_cast<double>(done) / (1 << 20);
  if (total == 0) {
    std::fprintf(stderr, "\r%s %.0f MiB", label_.c_str(), mib);
  } else {
    const double frac = static_cast<double>(done) / static_cast<double>(total);
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r%s [%.*s%*s] %3.0f%% %.0f/%.0f MiB", label_.c_str(), filled,
                 "##############################", kWidth - filled, "", frac * 100, mib,
                 static_cast<double>(total) / (1 << 20));
  }
  drawn_ = true;
}

}  // namespace pdfix::cli
