// What `pdfix unwind` is told (UnwindConfig) and what it tells (UnwindReport): shared by the pass
// and by the binaries it unwinds in.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "resolve/resolver.h"

namespace pdfix::passes {

struct UnwindConfig {
  size_t max_frames = 127;  // user frames kept per sample, as perf's default --max-stack
  std::string buildid_dir;  // --buildid-dir, for the run's one resolver (passes::common_for)
  // Servers a binary missing here is fetched from (space-separated URLs); empty: none.
  std::string debuginfod_urls;
  std::string debuginfod_client_cache;
};

struct UnwindReport {
  uint64_t samples = 0;      // with user registers and stack
  uint64_t complete = 0;     // unwound to the outermost frame
  uint64_t partial = 0;      // some callers found, then a stop
  uint64_t failed = 0;       // no caller found
  uint64_t kernel_only = 0;  // no user registers (a kernel thread): the kernel callchain stays
  uint64_t stack_bytes_dropped = 0;
  uint64_t attrs_rewritten = 0;
  uint64_t early_flushes = 0;  // times the records held for their round's turn outgrew the bound
  std::map<std::string, uint64_t, std::less<>> stops;  // why unwinds that were not complete stopped
  // Binaries samples stopped in for want of CFI, or of a proven copy: name -> samples.
  std::map<std::string, uint64_t> lacking_cfi;
  std::map<std::string, std::string> unproven;  // name -> why no proven copy was found
  std::map<std::string, std::string> fetched;   // name -> what debuginfod did for it
  std::string unreachable;  // the debuginfod servers that could not be asked, and why

  // Samples whose unwind stopped in a binary of which no proven copy was found.
  uint64_t stopped_without_binary() const {
    uint64_t n = 0;
    for (const auto& [name, samples] : lacking_cfi) n += unproven.contains(name) ? samples : 0;
    return n;
  }
};

}  // namespace pdfix::passes
