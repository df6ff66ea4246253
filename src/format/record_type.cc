#include "format/record_type.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace pdfix::format {
namespace {

constexpr std::array<std::string_view, 23> kKernelNames = {
    "",
    "MMAP",
    "LOST",
    "COMM",
    "EXIT",
    "THROTTLE",
    "UNTHROTTLE",
    "FORK",
    "READ",
    "SAMPLE",
    "MMAP2",
    "AUX",
    "ITRACE_START",
    "LOST_SAMPLES",
    "SWITCH",
    "SWITCH_CPU_WIDE",
    "NAMESPACES",
    "KSYMBOL",
    "BPF_EVENT",
    "CGROUP",
    "TEXT_POKE",
    "AUX_OUTPUT_HW_ID",
    "CALLCHAIN_DEFERRED",
};

constexpr std::array<std::string_view, 23> kUserNames = {
    "ATTR",           "EVENT_TYPE",    "TRACING_DATA",     "BUILD_ID",
    "FINISHED_ROUND", "ID_INDEX",      "AUXTRACE_INFO",    "AUXTRACE",
    "AUXTRACE_ERROR", "THREAD_MAP",    "CPU_MAP",          "STAT_CONFIG",
    "STAT",           "STAT_ROUND",    "EVENT_UPDATE",     "TIME_CONV",
    "FEATURE",        "COMPRESSED",    "FINISHED_INIT",    "COMPRESSED2",
    "BPF_METADATA",   "SCHEDSTAT_CPU", "SCHEDSTAT_DOMAIN",
};

// simpleperf's, from 32769 (its record.h).
constexpr std::array<std::string_view, 10> kSimpleperfNames = {
    "SIMPLEPERF_KERNEL_SYMBOL", "SIMPLEPERF_DSO",
    "SIMPLEPERF_SYMBOL",        "SIMPLEPERF_SPLIT",
    "SIMPLEPERF_SPLIT_END",     "SIMPLEPERF_EVENT_ID",
    "SIMPLEPERF_CALLCHAIN",     "SIMPLEPERF_UNWINDING_RESULT",
    "SIMPLEPERF_TRACING_DATA",  "SIMPLEPERF_DEBUG",
};

}  // namespace

std::string record_type_name(uint32_t type) {
  if (type > 0 && type < kKernelNames.size()) return std::string(kKernelNames[type]);
  if (type >= kHeaderAttr && type - kHeaderAttr < kUserNames.size()) {
    return std::string(kUserNames[type - kHeaderAttr]);
  }
  if (type > kSimpleperfFirst && type - kSimpleperfFirst <= kSimpleperfNames.size()) {
    return std::string(kSimpleperfNames[type - kSimpleperfFirst - 1]);
  }
  return absl::StrCat("UNKNOWN(", type, ")");
}

std::string_view cpumode_name(uint16_t misc) {
  switch (misc & kCpuModeMask) {
    case kCpuModeKernel:
      return "kernel";
    case kCpuModeUser:
      return "user";
    case kCpuModeHypervisor:
      return "hypervisor";
    case kCpuModeGuestKernel:
      return "guest-kernel";
    case kCpuModeGuestUser:
      return "guest-user";
    default:
      return "unknown";
  }
}

}  // namespace pdfix::format
