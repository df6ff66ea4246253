// Feature sections of the file header: ids, names and typed decoders for the ones pdfix reads.
// Sections pdfix does not decode are kept as bytes by the writer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "format/attr.h"
#include "format/build_id.h"
#include "format/byte_order.h"

namespace pdfix::format {

enum FeatureId : int {
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsRelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrCpus = 7,
  kFeatCpuDesc = 8,
  kFeatCpuId = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatGroupDesc = 17,
  kFeatAuxtrace = 18,
  kFeatDirFormat = 24,
  kFeatCompressed = 27,
  kFeatClockData = 29,
  kFeatPmuCaps = 31,
  kFeatCpuDomainInfo = 32,
  kFeatEMachine = 33,  // {u32 e_machine, u32 e_flags}: the recorded ELF machine
  kFeatClnSize = 34,
};

// perf's lower-case name ("build_id", "osrelease"), or "feature_<n>".
std::string feature_name(int id);

// A feature payload: its bytes and the file's byte order. `offset` is for error messages.
struct FeatureBytes {
  std::span<const uint8_t> bytes;
  Endian endian;
  uint64_t offset = 0;
};

// HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID: {u32 len, char str[len]}.
absl::StatusOr<std::string> decode_string_feature(const FeatureBytes& f);

struct NrCpus {
  uint32_t available = 0;
  uint32_t online = 0;
};
absl::StatusOr<NrCpus> decode_nrcpus(const FeatureBytes& f);

absl::StatusOr<std::vector<std::string>> decode_cmdline(const FeatureBytes& f);

inline constexpr size_t kBuildIdMax = 20;
inline constexpr uint32_t kBuildIdEntryFixedSize = 36;  // header, pid, build_id[24]

struct BuildIdEntry {
  uint64_t offset = 0;  // in the file, for messages
  uint16_t misc = 0;
  int32_t pid = 0;
  std::array<uint8_t, kBuildIdMax> id{};
  uint8_t id_size = 0;  // kBuildIdMax when the entry predates MISC_BUILD_ID_SIZE
  std::string filename;
  bool from_record = false;  // a HEADER_BUILD_ID record, not the BUILD_ID feature

  std::optional<BuildId> build_id() const { return BuildId::from_bytes({id.data(), id_size}); }
};
// The bytes of `entry` as the BUILD_ID feature `table` holds them (its header gives its size);
// empty for an entry of a HEADER_BUILD_ID record or outside the feature.
std::span<const uint8_t> build_id_entry_bytes(const FeatureBytes& table, const BuildIdEntry& entry);
// What names one table entry: the file `name` on `machine` (format/machine.h) has `id`. The passes
// that add entries compare by it, so that none is listed twice.
std::string build_id_entry_key(uint64_t machine, std::string_view name, const BuildId& id);

// A recording's build-id table, parsed once: the BUILD_ID feature's entries, then those of the
// HEADER_BUILD_ID records in the order they came.
struct BuildIdTable {
  std::vector<BuildIdEntry> entries;
  bool sizes_from_6_12_0 = false;  // the feature reads only with perf 6.12.0's entry sizes
};
// The BUILD_ID feature, or the body of a pipe-mode HEADER_BUILD_ID record (a one-entry table).
// A table perf 6.12.0 wrote with wrong entry sizes is read the way it was written.
absl::StatusOr<std::vector<BuildIdEntry>> decode_build_id_table(const FeatureBytes& f);
// perf 6.12.0 gave each entry the size ALIGN(36 + name + 1, 8) but wrote 36 bytes more than
// that. The entries when the table reads cleanly that way, else nullopt.
std::optional<std::vector<BuildIdEntry>> decode_build_id_table_6_12_0(const FeatureBytes& f);
std::string build_id_hex(const BuildIdEntry& e);
// One entry with MISC_BUILD_ID_SIZE set: a table entry with `type` 0 (filename padded to 64, as
// perf 6.1 writes it), or a pipe-mode HEADER_BUILD_ID record with type 67 (8-aligned).
std::vector<uint8_t> encode_build_id_entry(uint32_t type, uint16_t misc, int32_t pid,
                                           std::span<const uint8_t> id, std::string_view filename,
                                           const Endian& e);

struct CompressionInfo {
  uint32_t version = 0;
  uint32_t type = 0;  // 1 = zstd
  uint32_t level = 0;
  uint32_t ratio = 0;
  uint32_t mmap_len = 0;
};
absl::StatusOr<CompressionInfo> decode_compressed(const FeatureBytes& f);
// The COMPRESSED feature's bytes with its level replaced (data compressed anew says at which);
// empty when `f` is too short to hold one.
std::vector<uint8_t> with_compression_level(const FeatureBytes& f, uint32_t level);

// DIR_FORMAT: the version of a directory recording (perf record --threads); nullopt if unreadable.
std::optional<uint64_t> dir_format_version(const FeatureBytes& f);

// AUXTRACE: an index of the file offsets of AUXTRACE records, which moves when the data does.
struct AuxtraceIndexEntry {
  uint64_t file_offset = 0;
  uint64_t size = 0;
};
absl::StatusOr<std::vector<AuxtraceIndexEntry>> decode_auxtrace_index(const FeatureBytes& f);
std::vector<uint8_t> encode_auxtrace_index(const std::vector<AuxtraceIndexEntry>& entries,
                                           const Endian& e);

struct ClockData {
  uint32_t version = 0;
  int32_t clockid = 0;
  uint64_t wall_clock_ns = 0;
  uint64_t clockid_time_ns = 0;
};
absl::StatusOr<ClockData> decode_clock_data(const FeatureBytes& f);

struct EMachine {
  uint32_t machine = 0;  // EM_*
  uint32_t flags = 0;
};
absl::StatusOr<EMachine> decode_e_machine(const FeatureBytes& f);

}  // namespace pdfix::format
