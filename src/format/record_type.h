// Record type numbers of perf.data and what the framing of each one needs to know.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pdfix::format {

enum RecordType : uint32_t {
  kMmap = 1,
  kLost = 2,
  kComm = 3,
  kExit = 4,
  kThrottle = 5,
  kUnthrottle = 6,
  kFork = 7,
  kRead = 8,
  kSample = 9,
  kMmap2 = 10,
  kAux = 11,
  kItraceStart = 12,
  kLostSamples = 13,
  kSwitch = 14,
  kSwitchCpuWide = 15,
  kNamespaces = 16,
  kKsymbol = 17,
  kBpfEvent = 18,
  kCgroup = 19,
  kTextPoke = 20,
  kAuxOutputHwId = 21,
  kCallchainDeferred = 22,
  kHeaderAttr = 64,
  kHeaderEventType = 65,
  kHeaderTracingData = 66,
  kHeaderBuildId = 67,
  kFinishedRound = 68,
  kIdIndex = 69,
  kAuxtraceInfo = 70,
  kAuxtrace = 71,
  kAuxtraceError = 72,
  kThreadMap = 73,
  kCpuMap = 74,
  kStatConfig = 75,
  kStat = 76,
  kStatRound = 77,
  kEventUpdate = 78,
  kTimeConv = 79,
  kHeaderFeature = 80,
  kCompressed = 81,
  kFinishedInit = 82,
  kCompressed2 = 83,
  kBpfMetadata = 84,
  kSchedstatCpu = 85,
  kSchedstatDomain = 86,
  // simpleperf's own records; their header keeps the high 16 bits of a 32-bit size in `misc`.
  kSimpleperfFirst = 32768,
};

inline constexpr uint32_t kRecordHeaderSize = 8;
// perf's own fixed parts of the two records that carry payload beyond header.size.
inline constexpr uint32_t kTracingDataRecordSize = 12;
inline constexpr uint32_t kAuxtraceRecordSize = 48;

// perf's name for the type ("MMAP2", "FINISHED_ROUND"), or "UNKNOWN(n)".
std::string record_type_name(uint32_t type);

// Kernel-generated records (everything below the user range) carry the sample_id trailer when
// attr.sample_id_all is set; SAMPLE has its own layout.
inline bool is_kernel_type(uint32_t type) { return type < kHeaderAttr; }
inline bool has_sample_id_trailer(uint32_t type) { return is_kernel_type(type) && type != kSample; }
inline bool is_known_type(uint32_t type) {
  return (type >= kMmap && type <= kCallchainDeferred) ||
         (type >= kHeaderAttr && type <= kSchedstatDomain);
}
inline bool is_compressed_type(uint32_t type) {
  return type == kCompressed || type == kCompressed2;
}
// Records that are all header.size says and that teach the session nothing: a reader may frame
// them by their header alone. perf writes a FINISHED_ROUND every round, hundreds in a recording.
inline bool is_plain_type(uint32_t type) {
  return is_kernel_type(type) || type == kFinishedRound || type == kFinishedInit;
}

// The cpumode bits of record misc.
enum CpuMode : uint16_t {
  kCpuModeMask = 7,
  kCpuModeKernel = 1,
  kCpuModeUser = 2,
  kCpuModeHypervisor = 3,
  kCpuModeGuestKernel = 4,
  kCpuModeGuestUser = 5,
};
inline constexpr uint16_t kMiscMmapData = 0x2000;
// A COMM record's: the name comes with an exec, which replaces the process's image and maps.
inline constexpr uint16_t kMiscCommExec = 0x2000;
inline constexpr uint16_t kMiscMmapBuildId = 0x4000;
inline constexpr uint16_t kMiscBuildIdSize = 0x8000;

std::string_view cpumode_name(uint16_t misc);

}  // namespace pdfix::format
