// The referee where two unwinders disagree: a return address must end a call instruction in its
// binary (LLVM's x86-64 disassembler decides), whatever either unwinder printed; the one other
// return address the binary explains is a signal handler's, into the sigreturn trampoline. perf
// script prints a user frame as its file offset in the DSO, and a caller as its return address less
// one.
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
  CallSites();
  ~CallSites();
  // Whether the bytes of `path` just before file offset `offset` are a call instruction.
  bool ends_call(const std::string& path, uint64_t offset);

  // The callers in one sample as perf script prints it (its lines: the header, then a frame a
  // line): every user frame after the first, unless it is the interrupted pc above a signal frame.
  // Each as (DSO path, the return address's file offset).
  static std::vector<std::pair<std::string, uint64_t>> callers(
      const std::vector<std::string>& sample);
  // Whether file offset `offset` of `path` (read by ends_call) starts x86-64's rt_sigreturn.
  bool starts_sigreturn(const std::string& path, uint64_t offset);
  // Of a sample's callers, those whose return address ends no call (nor is a signal handler's
  // return into the sigreturn trampoline, whose caller is then the interrupted pc).
  std::vector<std::string> bad(const std::vector<std::string>& sample);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::pair<std::string, uint64_t>, bool> seen_;
};

}  // namespace pdfix::e2e
