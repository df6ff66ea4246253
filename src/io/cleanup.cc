#include "io/cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace pdfix::io {
namespace {

constexpr size_t kSlots = 64;
constexpr size_t kPathMax = 4096;

struct Slot {
  std::atomic<bool> used{false};
  bool directory = false;
  std::array<char, kPathMax> path{};
};

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): reached from signal handlers
std::array<Slot, kSlots> slots;

void remove_all() {
  for (Slot& s : slots) {
    if (s.used.load() && !s.directory) unlink(s.path.data());
  }
  for (Slot& s : slots) {
    if (s.used.load() && s.directory) rmdir(s.path.data());
  }
}

void on_stop(int sig) {
  remove_all();
  signal(sig, SIG_DFL);
  raise(sig);
}

void on_bus_error(int /*sig*/) {
  static constexpr char kMessage[] =
      "pdfix: the input file shrank while it was being read (SIGBUS); nothing was written\n";
  remove_all();
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(2);
}

}  // namespace

void install_cleanup_handlers() {
  struct sigaction sa{};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_stop;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = on_bus_error;
  sigaction(SIGBUS, &sa, nullptr);
}

int remember_temp(const std::string& path, bool directory) {
  if (path.size() >= kPathMax) return -1;
  for (size_t i = 0; i < kSlots; ++i) {
    Slot& s = slots[i];
    if (s.used.load()) continue;
    s.directory = directory;
    std::memcpy(s.path.data(), path.c_str(), path.size() + 1);
    s.used.store(true);
    return static_cast<int>(i);
  }
  return -1;
}

void forget_temp(int slot) {
  if (slot >= 0) slots[static_cast<size_t>(slot)].used.store(false);
}

}  // namespace pdfix::io
