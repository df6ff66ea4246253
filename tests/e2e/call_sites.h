// The referee where two unwinders disagree: a return address must end a call instruction in its
// binary (LLVM's disassembler for the binary's machine decides: x86-64 or aarch64), whatever either
// unwinder printed; the one other return address the binary explains is a signal handler's, into
// the sigreturn trampoline. A direct call must call the function its callee frame is in, or one
// that jumps there (a tail call). perf script prints a user frame as its file offset in the DSO,
// and a caller as its return address less one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pdfix::e2e {

class CallSites {
 public:
  // The binaries are read under `root` (a sysroot for another host's recording), each decoded for
  // its own machine: x86-64 or aarch64.
  explicit CallSites(std::string root = "");
  ~CallSites();
  // Whether the bytes of `path` just before file offset `offset` are a call instruction.
  bool ends_call(const std::string& path, uint64_t offset);

  // The callers in one sample as perf script prints it (its lines: the header, then a frame a
  // line): every user frame after the first, unless it is the interrupted pc above a signal frame.
  // Each as (DSO path, the return address's file offset).
  static std::vector<std::pair<std::string, uint64_t>> callers(
      const std::vector<std::string>& sample);
  // Each user frame of a sample, in order.
  struct Frame {
    std::string dso;          // a path, or "[unknown]", "[vdso]"
    uint64_t at = 0;          // file offset in the DSO (perf prints a caller's less one)
    bool restore_rt = false;  // glibc's signal trampoline: the frame above it was interrupted
  };
  static std::vector<Frame> user_frames(const std::vector<std::string>& sample);
  // Whether a frame line of perf script is the kernel's or a module's.
  static bool kernel_frame(const std::string& line);
  // Whether file offset `offset` of `path` (read by ends_call) starts x86-64's rt_sigreturn.
  bool starts_sigreturn(const std::string& path, uint64_t offset);
  // Of a sample's callers, those whose return address ends no call (nor is a signal handler's
  // return into the sigreturn trampoline, whose caller is then the interrupted pc), those after a
  // direct call to another function than their callee's (wrong_target), and user frames perf could
  // not place ([unknown]) other than a chain's last.
  std::vector<std::string> bad(const std::vector<std::string>& sample);
  // Why the call ending at `ret` in `caller` cannot have made the frame at `callee_at` in `callee`:
  // a direct call in the callee's own binary to a function that is not the callee's and jumps to
  // it nowhere. Empty when it may have (an indirect call, one through the PLT, no symbols to say).
  std::string wrong_target(const std::string& caller, uint64_t ret, const std::string& callee,
                           uint64_t callee_at);
  // How many direct calls wrong_target could judge (both ends in one binary with symbols).
  size_t targets_judged() const { return targets_judged_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::pair<std::string, uint64_t>, bool> seen_;
  size_t targets_judged_ = 0;
};

}  // namespace pdfix::e2e
