// Decoded views of the record bodies that pdfix reads or rewrites. Each decoder takes the whole
// record (header included) and the length of its sample_id trailer, and never reads past either.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "format/byte_order.h"
#include "format/record_type.h"

namespace pdfix::format {

struct RecordHeader {
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;
};
inline RecordHeader read_record_header(const Endian& e, const uint8_t* p) {
  return {e.u32(p), e.u16(p + 4), e.u16(p + 6)};
}
inline void write_record_header(const Endian& e, uint8_t* p, const RecordHeader& h) {
  e.put_u32(p, h.type);
  e.put_u16(p + 4, h.misc);
  e.put_u16(p + 6, h.size);
}

inline constexpr uint32_t kMmapFilenameOffset = 40;   // header, pid, tid, start, len, pgoff
inline constexpr uint32_t kMmap2IdOffset = 40;        // dev/ino, or the build-id: 24 bytes
inline constexpr uint32_t kMmap2ProtOffset = 64;      // + 24 bytes of dev/ino or build-id
inline constexpr uint32_t kMmap2FilenameOffset = 72;  // + prot, flags

struct MmapRecord {
  bool is_mmap2 = false;
  uint16_t misc = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t start = 0;
  uint64_t len = 0;
  uint64_t pgoff = 0;
  // MMAP2 only; either dev/ino or a build-id, as misc's MMAP_BUILD_ID bit says.
  uint32_t maj = 0;
  uint32_t min = 0;
  uint64_t ino = 0;
  uint64_t ino_generation = 0;
  uint8_t build_id_size = 0;
  std::array<uint8_t, 20> build_id{};
  // The record's misc says MMAP_BUILD_ID, its bytes hold dev/ino: decoded as dev/ino, the bit
  // cleared in `misc` (not in the record's bytes).
  bool build_id_bit_leaked = false;
  uint32_t prot = 0;
  uint32_t flags = 0;
  std::string_view filename;

  bool has_build_id() const;
  // Byte offset of `len` inside the record, for passes that patch it in place.
  static constexpr uint32_t kLenOffset = 24;
};

absl::StatusOr<MmapRecord> decode_mmap(std::span<const uint8_t> record, const Endian& e,
                                       uint32_t trailer_size, uint64_t file_offset);

// An MMAP2's prot and flags are the mmap(2) ABI's bits as the recording's kernel gave them: the
// values of the kernel's uapi, the same on every architecture Linux runs, not this host's headers.
inline constexpr uint32_t kProtRead = 1;
inline constexpr uint32_t kProtExec = 4;
inline constexpr uint32_t kMapPrivate = 2;

// The prot and flags of the mapping `m` describes. An MMAP record has none: those an MMAP2 gives it
// (MMAP_DATA is the kernel's mark for a non-executable one).
struct ProtFlags {
  uint32_t prot = 0;
  uint32_t flags = 0;
};
ProtFlags mmap2_prot_flags(const MmapRecord& m);

// Builds an MMAP2 record carrying a build-id from `m` (MMAP or MMAP2), copying `trailer` verbatim.
std::vector<uint8_t> encode_mmap2_with_build_id(const MmapRecord& m,
                                                std::span<const uint8_t> build_id,
                                                std::span<const uint8_t> trailer, const Endian& e);

// The zstd bytes of a COMPRESSED (81: the rest of the record) or COMPRESSED2 (83: a u64 data size,
// then the data, padded to 8) record.
absl::StatusOr<std::span<const uint8_t>> compressed_payload(std::span<const uint8_t> record,
                                                            const Endian& e, uint64_t file_offset);
inline constexpr uint32_t kCompressedHeaderSize = 8;
inline constexpr uint32_t kCompressed2HeaderSize = 16;
// The bytes before the zstd data in a record of `type` (COMPRESSED or COMPRESSED2).
inline uint32_t compressed_header_size(uint32_t type) {
  return type == kCompressed2 ? kCompressed2HeaderSize : kCompressedHeaderSize;
}
// Completes a record of `type` whose zstd data follows compressed_header_size(type) bytes of
// `record`: COMPRESSED2 is padded to 8 and states its data's size; then the record header.
absl::Status finish_compressed_record(std::vector<uint8_t>& record, uint32_t type, const Endian& e);

// The length of the payload that follows an AUXTRACE or TRACING_DATA record and that its
// header.size does not count, from the record's fixed part; 0 for every other type. nullopt:
// `record` is shorter than that fixed part.
std::optional<uint64_t> unframed_payload_size(std::span<const uint8_t> record, uint32_t type,
                                              const Endian& e);

struct CommRecord {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string_view comm;
};
absl::StatusOr<CommRecord> decode_comm(std::span<const uint8_t> record, const Endian& e,
                                       uint32_t trailer_size, uint64_t file_offset);

// FORK and EXIT.
struct TaskRecord {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint32_t tid = 0;
  uint32_t ptid = 0;
  uint64_t time = 0;
};
absl::StatusOr<TaskRecord> decode_task(std::span<const uint8_t> record, const Endian& e,
                                       uint64_t file_offset);

// The leading fixed fields of a SAMPLE, in perf's order, as far as sample_type has them.
struct SampleHead {
  uint64_t identifier = 0;
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t end = 0;  // offset in the record just past these fields
};
absl::StatusOr<SampleHead> decode_sample_head(std::span<const uint8_t> record, const Endian& e,
                                              uint64_t sample_type, uint64_t file_offset);

// Past the READ values that `read_format` lays out at `pos` (pos itself without READ).
absl::StatusOr<uint64_t> sample_read_end(std::span<const uint8_t> record, const Endian& e,
                                         uint64_t sample_type, uint64_t read_format, uint64_t pos,
                                         uint64_t file_offset);

// Where a SAMPLE's callchain (u64 nr, then nr ips) starts in the record: past the fixed head
// and the READ values `read_format` lays out. nullopt when sample_type has no CALLCHAIN.
absl::StatusOr<std::optional<uint64_t>> sample_callchain_at(std::span<const uint8_t> record,
                                                            const Endian& e, uint64_t sample_type,
                                                            uint64_t read_format,
                                                            uint64_t file_offset);

// The callchain marker (PERF_CONTEXT_USER_DEFERRED) a sample ends its kernel callchain with, then a
// cookie, when its user part comes later in a CALLCHAIN_DEFERRED record {cookie, nr, ips[nr]}.
inline constexpr uint64_t kContextUserDeferred = static_cast<uint64_t>(-640);
inline constexpr uint64_t kContextUser = static_cast<uint64_t>(-512);
inline constexpr uint64_t kContextKernel = static_cast<uint64_t>(-128);
// Callchain entries at or above this are context markers (PERF_CONTEXT_*), not addresses.
inline constexpr uint64_t kContextMax = static_cast<uint64_t>(-4095);
inline bool is_context_marker(uint64_t entry) { return entry >= kContextMax; }

// A SAMPLE's callchain entries, context markers included (READ values skipped as
// sample_callchain_at skips them), appended to `to`: none when sample_type has no CALLCHAIN. The
// caller's vector, so that one per reader serves every sample.
absl::Status sample_callchain(std::span<const uint8_t> record, const Endian& e,
                              uint64_t sample_type, uint64_t read_format, uint64_t file_offset,
                              std::vector<uint64_t>& to);
// The same, for a sample whose head the caller has decoded.
absl::Status sample_callchain(std::span<const uint8_t> record, const Endian& e,
                              const SampleHead& head, uint64_t sample_type, uint64_t read_format,
                              uint64_t file_offset, std::vector<uint64_t>& to);

// The cookie of a callchain whose user part comes later: it ends with PERF_CONTEXT_USER_DEFERRED
// and the cookie. nullopt: the callchain is whole.
std::optional<uint64_t> deferred_cookie(std::span<const uint64_t> callchain);

// A CALLCHAIN_DEFERRED record: {cookie, nr, ips[nr]}, then the sample_id trailer.
struct CallchainDeferred {
  uint64_t cookie = 0;
  std::vector<uint64_t> ips;
};
absl::StatusOr<CallchainDeferred> decode_callchain_deferred(std::span<const uint8_t> record,
                                                            const Endian& e, uint32_t trailer_size,
                                                            uint64_t file_offset);

// The feature a pipe's HEADER_FEATURE record carries, or (a record of 16 bytes) the number after
// the writer's last feature; nullopt for a record too short to say.
std::optional<uint64_t> header_feature_id(std::span<const uint8_t> record, const Endian& e);
void set_header_feature_id(std::span<uint8_t> record, const Endian& e, uint64_t id);
// Where a HEADER_FEATURE record's feature bytes begin: after the record header and the id.
inline constexpr uint32_t kHeaderFeatureBody = kRecordHeaderSize + 8;
// The feature bytes a HEADER_FEATURE record carries; nullopt for one that carries none (the record
// ending a stream's features, numbered as the writer's HEADER_LAST_FEATURE, is one).
std::optional<std::span<const uint8_t>> header_feature_payload(std::span<const uint8_t> record);
// A HEADER_FEATURE record carrying feature `id`'s bytes; nullopt when they do not fit a record.
std::optional<std::vector<uint8_t>> encode_header_feature(const Endian& e, uint16_t misc,
                                                          uint64_t id,
                                                          std::span<const uint8_t> payload);

}  // namespace pdfix::format
