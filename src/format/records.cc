#include "format/records.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "format/attr.h"
#include "format/error.h"
#include "format/record_type.h"
#include "format/sample_layout.h"

namespace pdfix::format {
namespace {

constexpr uint32_t kMmap2BuildIdSizeOffset = 40;
constexpr uint32_t kMmap2BuildIdOffset = 44;

// The NUL-terminated string between `from` and the trailer.
absl::StatusOr<std::string_view> string_field(std::span<const uint8_t> record, uint32_t from,
                                              uint32_t trailer_size, uint64_t file_offset,
                                              const char* what) {
  if (record.size() < from + trailer_size) {
    return malformed_at(file_offset, what, " record of ", record.size(),
                        " bytes is too short for its fields and a ", trailer_size,
                        "-byte sample_id trailer");
  }
  const char* p = reinterpret_cast<const char*>(record.data() + from);
  const char* end = reinterpret_cast<const char*>(record.data() + record.size() - trailer_size);
  return std::string_view(p, std::find(p, end, '\0') - p);
}

// Whether an MMAP2's 24 bytes after pgoff are a build-id as the kernel and perf write one: a size
// of 1 to 20, three zero bytes, the id, and zeros after it.
bool holds_build_id(const uint8_t* p) {
  const uint8_t size = p[kMmap2BuildIdSizeOffset];
  if (size == 0 || size > 20) return false;
  const uint8_t* id = p + kMmap2BuildIdOffset;
  return std::all_of(p + kMmap2BuildIdSizeOffset + 1, id, [](uint8_t b) { return b == 0; }) &&
         std::all_of(id + size, id + 20, [](uint8_t b) { return b == 0; });
}

}  // namespace

bool MmapRecord::has_build_id() const { return is_mmap2 && (misc & kMiscMmapBuildId); }

absl::StatusOr<MmapRecord> decode_mmap(std::span<const uint8_t> record, const Endian& e,
                                       uint32_t trailer_size, uint64_t file_offset) {
  const uint8_t* p = record.data();
  MmapRecord m;
  m.is_mmap2 = e.u32(p) == kMmap2;
  m.misc = e.u16(p + 4);
  uint32_t name_at = m.is_mmap2 ? kMmap2FilenameOffset : kMmapFilenameOffset;
  auto name =
      string_field(record, name_at, trailer_size, file_offset, m.is_mmap2 ? "MMAP2" : "MMAP");
  if (!name.ok()) return name.status();
  m.filename = *name;
  m.pid = e.u32(p + 8);
  m.tid = e.u32(p + 12);
  m.start = e.u64(p + 16);
  m.len = e.u64(p + 24);
  m.pgoff = e.u64(p + 32);
  if (m.is_mmap2) {
    if ((m.misc & kMiscMmapBuildId) && !holds_build_id(p)) {
      // The kernel sets MMAP_BUILD_ID in the record it shares among the sessions recording a
      // mapping and does not clear it (perf_event_mmap_output): a session that asked for no
      // build-ids, beside one that did, gets its dev/ino under the bit.
      m.misc &= ~kMiscMmapBuildId;
      m.build_id_bit_leaked = true;
    }
    if (m.misc & kMiscMmapBuildId) {
      m.build_id_size = p[kMmap2BuildIdSizeOffset];
      std::memcpy(m.build_id.data(), p + kMmap2BuildIdOffset, 20);
    } else {
      m.maj = e.u32(p + 40);
      m.min = e.u32(p + 44);
      m.ino = e.u64(p + 48);
      m.ino_generation = e.u64(p + 56);
    }
    m.prot = e.u32(p + 64);
    m.flags = e.u32(p + 68);
  }
  return m;
}

std::vector<uint8_t> encode_mmap2_with_build_id(const MmapRecord& m,
                                                std::span<const uint8_t> build_id,
                                                std::span<const uint8_t> trailer, const Endian& e) {
  // The filename keeps its NUL and is padded to 8 bytes, as the kernel writes it.
  const uint32_t name_bytes = (static_cast<uint32_t>(m.filename.size()) + 1 + 7) & ~7U;
  const uint32_t size = kMmap2FilenameOffset + name_bytes + static_cast<uint32_t>(trailer.size());
  std::vector<uint8_t> out(size, 0);
  uint8_t* p = out.data();
  write_record_header(
      e, p,
      {kMmap2, static_cast<uint16_t>(m.misc | kMiscMmapBuildId), static_cast<uint16_t>(size)});
  e.put_u32(p + 8, m.pid);
  e.put_u32(p + 12, m.tid);
  e.put_u64(p + 16, m.start);
  e.put_u64(p + 24, m.len);
  e.put_u64(p + 32, m.pgoff);
  const size_t n = std::min<size_t>(build_id.size(), 20);
  p[kMmap2BuildIdSizeOffset] = static_cast<uint8_t>(n);
  std::memcpy(p + kMmap2BuildIdOffset, build_id.data(), n);
  const ProtFlags pf = mmap2_prot_flags(m);
  e.put_u32(p + kMmap2ProtOffset, pf.prot);
  e.put_u32(p + kMmap2ProtOffset + 4, pf.flags);
  std::memcpy(p + kMmap2FilenameOffset, m.filename.data(), m.filename.size());
  std::memcpy(p + size - trailer.size(), trailer.data(), trailer.size());
  return out;
}

ProtFlags mmap2_prot_flags(const MmapRecord& m) {
  if (m.is_mmap2) return {m.prot, m.flags};
  return {kProtRead | ((m.misc & kMiscMmapData) ? 0 : kProtExec), kMapPrivate};
}

absl::Status finish_compressed_record(std::vector<uint8_t>& record, uint32_t type,
                                      const Endian& e) {
  const uint32_t head = compressed_header_size(type);
  const uint64_t data_size = record.size() - head;
  if (type == kCompressed2) record.resize((record.size() + 7) & ~size_t{7}, 0);
  if (record.size() > UINT16_MAX) {
    return absl::InternalError("a re-compressed chunk does not fit one record");
  }
  write_record_header(e, record.data(), {type, 0, static_cast<uint16_t>(record.size())});
  if (type == kCompressed2) e.put_u64(record.data() + kRecordHeaderSize, data_size);
  return absl::OkStatus();
}

std::optional<uint64_t> unframed_payload_size(std::span<const uint8_t> record, uint32_t type,
                                              const Endian& e) {
  if (type == kAuxtrace) {
    if (record.size() < kAuxtraceRecordSize) return std::nullopt;
    return e.u64(record.data() + 8);  // u64 size, then offset, reference, idx, tid, cpu
  }
  if (type == kHeaderTracingData) {
    if (record.size() < kTracingDataRecordSize) return std::nullopt;
    return e.u32(record.data() + 8);
  }
  return 0;
}

absl::StatusOr<std::span<const uint8_t>> compressed_payload(std::span<const uint8_t> record,
                                                            const Endian& e, uint64_t file_offset) {
  const RecordHeader h = read_record_header(e, record.data());
  if (h.type != kCompressed2) return record.subspan(kCompressedHeaderSize);
  if (record.size() < kCompressed2HeaderSize) {
    return malformed_at(file_offset, "COMPRESSED2 record without data_size");
  }
  const uint64_t data_size = e.u64(record.data() + kRecordHeaderSize);
  if (data_size > record.size() - kCompressed2HeaderSize) {
    return malformed_at(file_offset, "COMPRESSED2 data_size ", data_size, " exceeds the record");
  }
  return record.subspan(kCompressed2HeaderSize, data_size);
}

absl::StatusOr<CommRecord> decode_comm(std::span<const uint8_t> record, const Endian& e,
                                       uint32_t trailer_size, uint64_t file_offset) {
  auto comm = string_field(record, 16, trailer_size, file_offset, "COMM");
  if (!comm.ok()) return comm.status();
  return CommRecord{e.u32(record.data() + 8), e.u32(record.data() + 12), *comm};
}

absl::StatusOr<TaskRecord> decode_task(std::span<const uint8_t> record, const Endian& e,
                                       uint64_t file_offset) {
  if (record.size() < 32) {
    return malformed_at(file_offset, "FORK/EXIT record of ", record.size(), " bytes, need 32");
  }
  const uint8_t* p = record.data();
  return TaskRecord{e.u32(p + 8), e.u32(p + 12), e.u32(p + 16), e.u32(p + 20), e.u64(p + 24)};
}

absl::StatusOr<SampleHead> decode_sample_head(std::span<const uint8_t> record, const Endian& e,
                                              uint64_t sample_type, uint64_t file_offset) {
  return SampleLayout(sample_type, 0).head(record, e, file_offset);
}

absl::StatusOr<uint64_t> sample_read_end(std::span<const uint8_t> record, const Endian& e,
                                         uint64_t sample_type, uint64_t read_format, uint64_t pos,
                                         uint64_t file_offset) {
  if (!(sample_type & kSampleRead)) return pos;
  constexpr uint64_t kEnabled = 1, kRunning = 2, kId = 4, kGroup = 8, kLost = 16;
  const uint64_t per_value = 1 + ((read_format & kId) ? 1 : 0) + ((read_format & kLost) ? 1 : 0);
  const uint64_t times = ((read_format & kEnabled) ? 1 : 0) + ((read_format & kRunning) ? 1 : 0);
  uint64_t words = times + per_value;
  const uint64_t left = pos <= record.size() ? (record.size() - pos) / 8 : 0;
  if (read_format & kGroup) {
    if (left < 1) return malformed_at(file_offset, "SAMPLE ends in its READ");
    const uint64_t nr = e.u64(record.data() + pos);
    if (nr > left / per_value) return malformed_at(file_offset, "SAMPLE READ group of ", nr);
    words = 1 + times + nr * per_value;
  }
  if (words > left) return malformed_at(file_offset, "SAMPLE ends in its READ");
  return pos + 8 * words;
}

absl::StatusOr<std::optional<uint64_t>> sample_callchain_at(std::span<const uint8_t> record,
                                                            const Endian& e, uint64_t sample_type,
                                                            uint64_t read_format,
                                                            uint64_t file_offset) {
  if (!(sample_type & kSampleCallchain)) return std::nullopt;
  const SampleLayout layout(sample_type, read_format);
  auto head = layout.head(record, e, file_offset);
  if (!head.ok()) return head.status();
  return layout.callchain_at(record, e, *head, file_offset);
}

absl::Status sample_callchain(std::span<const uint8_t> record, const Endian& e,
                              uint64_t sample_type, uint64_t read_format, uint64_t file_offset,
                              std::vector<uint64_t>& to) {
  if (!(sample_type & kSampleCallchain)) return absl::OkStatus();
  const SampleLayout layout(sample_type, read_format);
  auto head = layout.head(record, e, file_offset);
  if (!head.ok()) return head.status();
  return layout.callchain(record, e, *head, file_offset, to);
}

absl::Status sample_callchain(std::span<const uint8_t> record, const Endian& e,
                              const SampleHead& head, uint64_t sample_type, uint64_t read_format,
                              uint64_t file_offset, std::vector<uint64_t>& to) {
  return SampleLayout(sample_type, read_format).callchain(record, e, head, file_offset, to);
}

std::optional<uint64_t> deferred_cookie(std::span<const uint64_t> callchain) {
  const size_t n = callchain.size();
  if (n < 2 || callchain[n - 2] != kContextUserDeferred) return std::nullopt;
  return callchain[n - 1];
}

absl::StatusOr<CallchainDeferred> decode_callchain_deferred(std::span<const uint8_t> record,
                                                            const Endian& e, uint32_t trailer_size,
                                                            uint64_t file_offset) {
  constexpr uint64_t kFixed = kRecordHeaderSize + 16;  // cookie, nr
  if (record.size() < kFixed + trailer_size) {
    return malformed_at(file_offset, "CALLCHAIN_DEFERRED record of ", record.size(),
                        " bytes is too short");
  }
  CallchainDeferred d{.cookie = e.u64(record.data() + kRecordHeaderSize)};
  const uint64_t nr = e.u64(record.data() + kRecordHeaderSize + 8);
  if (nr > (record.size() - kFixed - trailer_size) / 8) {
    return malformed_at(file_offset, "CALLCHAIN_DEFERRED claims ", nr,
                        " entries, more than the record holds");
  }
  d.ips.reserve(nr);
  for (uint64_t i = 0; i < nr; ++i) d.ips.push_back(e.u64(record.data() + kFixed + 8 * i));
  return d;
}

std::optional<uint64_t> header_feature_id(std::span<const uint8_t> record, const Endian& e) {
  if (record.size() < kRecordHeaderSize + 8) return std::nullopt;
  return e.u64(record.data() + kRecordHeaderSize);
}

void set_header_feature_id(std::span<uint8_t> record, const Endian& e, uint64_t id) {
  if (record.size() >= kRecordHeaderSize + 8) e.put_u64(record.data() + kRecordHeaderSize, id);
}

std::optional<std::span<const uint8_t>> header_feature_payload(std::span<const uint8_t> record) {
  if (record.size() <= kHeaderFeatureBody) return std::nullopt;
  return record.subspan(kHeaderFeatureBody);
}

std::optional<std::vector<uint8_t>> encode_header_feature(const Endian& e, uint16_t misc,
                                                          uint64_t id,
                                                          std::span<const uint8_t> payload) {
  const size_t size = kHeaderFeatureBody + payload.size();
  if (size > std::numeric_limits<uint16_t>::max()) return std::nullopt;
  std::vector<uint8_t> out(kHeaderFeatureBody);
  out.insert(out.end(), payload.begin(), payload.end());
  write_record_header(e, out.data(), {kHeaderFeature, misc, static_cast<uint16_t>(size)});
  e.put_u64(out.data() + kRecordHeaderSize, id);
  return out;
}

}  // namespace pdfix::format
