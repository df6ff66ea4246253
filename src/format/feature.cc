#include "format/feature.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "format/error.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::format {
namespace {

constexpr std::array<const char*, 35> kNames = {
    "reserved",        "tracing_data", "build_id",        "hostname",     "osrelease",
    "version",         "arch",         "nrcpus",          "cpudesc",      "cpuid",
    "total_mem",       "cmdline",      "event_desc",      "cpu_topology", "numa_topology",
    "branch_stack",    "pmu_mappings", "group_desc",      "auxtrace",     "stat",
    "cache",           "sample_time",  "mem_topology",    "clockid",      "dir_format",
    "bpf_prog_info",   "bpf_btf",      "compressed",      "cpu_pmu_caps", "clock_data",
    "hybrid_topology", "pmu_caps",     "cpu_domain_info", "e_machine",    "cln_size"};

// simpleperf's own, from 128 (its record_file_format.h).
constexpr std::array<const char*, 7> kSimpleperfNames = {
    "simpleperf_file",         "simpleperf_meta_info",
    "simpleperf_debug_unwind", "simpleperf_debug_unwind_file",
    "simpleperf_file2",        "simpleperf_etm_branch_list",
    "simpleperf_init_map"};

// A bounds-checked cursor over one feature payload.
class Cursor {
 public:
  explicit Cursor(const FeatureBytes& f) : f_(f) {}

  bool done() const { return pos_ >= f_.bytes.size(); }
  uint64_t offset() const { return f_.offset + pos_; }

  absl::StatusOr<uint32_t> u32() {
    if (auto s = need(4); !s.ok()) return s;
    pos_ += 4;
    return f_.endian.u32(f_.bytes.data() + pos_ - 4);
  }
  absl::StatusOr<uint64_t> u64() {
    if (auto s = need(8); !s.ok()) return s;
    pos_ += 8;
    return f_.endian.u64(f_.bytes.data() + pos_ - 8);
  }
  // perf's do_write_string: u32 length (padded, counting the NUL) then the bytes.
  absl::StatusOr<std::string> string() {
    auto len = u32();
    if (!len.ok()) return len.status();
    if (auto s = need(*len); !s.ok()) return s;
    const char* p = reinterpret_cast<const char*>(f_.bytes.data() + pos_);
    pos_ += *len;
    return std::string(p, std::find(p, p + *len, '\0'));
  }
  absl::StatusOr<const uint8_t*> take(uint64_t n) {
    if (auto s = need(n); !s.ok()) return s;
    pos_ += n;
    return f_.bytes.data() + pos_ - n;
  }

 private:
  absl::Status need(uint64_t n) const {
    if (f_.bytes.size() - pos_ < n) {
      return malformed_at(offset(), "feature section ends ", n - (f_.bytes.size() - pos_),
                          " bytes early");
    }
    return absl::OkStatus();
  }

  const FeatureBytes& f_;
  uint64_t pos_ = 0;
};

}  // namespace

std::string feature_name(int id) {
  if (id >= 0 && static_cast<size_t>(id) < kNames.size()) return kNames[id];
  if (id >= 128 && static_cast<size_t>(id - 128) < kSimpleperfNames.size()) {
    return kSimpleperfNames[id - 128];
  }
  return absl::StrCat("feature_", id);
}

absl::StatusOr<std::string> decode_string_feature(const FeatureBytes& f) {
  return Cursor(f).string();
}

absl::StatusOr<NrCpus> decode_nrcpus(const FeatureBytes& f) {
  Cursor c(f);
  auto avail = c.u32();
  if (!avail.ok()) return avail.status();
  auto online = c.u32();
  if (!online.ok()) return online.status();
  return NrCpus{*avail, *online};
}

absl::StatusOr<std::vector<std::string>> decode_cmdline(const FeatureBytes& f) {
  Cursor c(f);
  auto n = c.u32();
  if (!n.ok()) return n.status();
  std::vector<std::string> args;
  for (uint32_t i = 0; i < *n; ++i) {
    auto s = c.string();
    if (!s.ok()) return s.status();
    args.push_back(*std::move(s));
  }
  return args;
}

namespace {

BuildIdEntry decode_build_id_entry(const Endian& e, const uint8_t* p, uint64_t offset,
                                   size_t name_room) {
  BuildIdEntry b;
  b.offset = offset;
  b.misc = e.u16(p + 4);
  b.pid = e.s32(p + 8);
  std::copy_n(p + 12, kBuildIdMax, b.id.begin());
  b.id_size = (b.misc & kMiscBuildIdSize) ? std::min<uint8_t>(p[32], kBuildIdMax) : kBuildIdMax;
  const char* name = reinterpret_cast<const char*>(p + kBuildIdEntryFixedSize);
  b.filename.assign(name, std::find(name, name + name_room, '\0'));
  return b;
}

absl::StatusOr<std::vector<BuildIdEntry>> decode_build_id_table_strict(const FeatureBytes& f) {
  std::vector<BuildIdEntry> entries;
  uint64_t pos = 0;
  const Endian& e = f.endian;
  while (pos < f.bytes.size()) {
    uint64_t left = f.bytes.size() - pos;
    if (left < kBuildIdEntryFixedSize) {
      return malformed_at(f.offset + pos, "build-id entry needs ", kBuildIdEntryFixedSize,
                          " bytes, ", left, " left");
    }
    const uint8_t* p = f.bytes.data() + pos;
    uint16_t size = e.u16(p + 6);
    if (size < kBuildIdEntryFixedSize || size > left) {
      return malformed_at(f.offset + pos, "build-id entry size ", size, " is impossible (", left,
                          " bytes left)");
    }
    entries.push_back(decode_build_id_entry(e, p, f.offset + pos, size - kBuildIdEntryFixedSize));
    pos += size;
  }
  return entries;
}

}  // namespace

std::optional<std::vector<BuildIdEntry>> decode_build_id_table_6_12_0(const FeatureBytes& f) {
  std::vector<BuildIdEntry> entries;
  uint64_t pos = 0;
  const Endian& e = f.endian;
  while (pos < f.bytes.size()) {
    const uint64_t left = f.bytes.size() - pos;
    if (left < kBuildIdEntryFixedSize) return std::nullopt;
    const uint8_t* p = f.bytes.data() + pos;
    const uint64_t size = e.u16(p + 6);
    if (kBuildIdEntryFixedSize + size > left) return std::nullopt;
    BuildIdEntry b = decode_build_id_entry(e, p, f.offset + pos, size);
    // The one size 6.12.0 could have written for this name.
    if (size != (kBuildIdEntryFixedSize + b.filename.size() + 1 + 7) / 8 * 8) return std::nullopt;
    entries.push_back(std::move(b));
    pos += kBuildIdEntryFixedSize + size;
  }
  return entries;
}

absl::StatusOr<std::vector<BuildIdEntry>> decode_build_id_table(const FeatureBytes& f) {
  auto entries = decode_build_id_table_strict(f);
  if (entries.ok()) return entries;
  if (auto repaired = decode_build_id_table_6_12_0(f)) return std::move(*repaired);
  return entries.status();
}

std::span<const uint8_t> build_id_entry_bytes(const FeatureBytes& table,
                                              const BuildIdEntry& entry) {
  constexpr size_t kHeaderSize = 8;
  if (entry.from_record || entry.offset < table.offset ||
      entry.offset - table.offset > table.bytes.size() ||
      table.bytes.size() - (entry.offset - table.offset) < kHeaderSize) {
    return {};
  }
  const std::span<const uint8_t> rest = table.bytes.subspan(entry.offset - table.offset);
  const size_t size = read_record_header(table.endian, rest.data()).size;
  return size < kHeaderSize || size > rest.size() ? std::span<const uint8_t>{} : rest.first(size);
}

std::string build_id_entry_key(uint64_t machine, std::string_view name, const BuildId& id) {
  return absl::StrCat(machine, "\n", absl::string_view(name.data(), name.size()), "\n", id.hex());
}

std::string build_id_hex(const BuildIdEntry& e) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(e.id.data()), e.id_size));
}

std::vector<uint8_t> encode_build_id_entry(uint32_t type, uint16_t misc, int32_t pid,
                                           std::span<const uint8_t> id, std::string_view filename,
                                           const Endian& e) {
  // Table entries as perf up to 6.11 writes them, the name padded to 64; a record in a stream must
  // keep the records after it 8-aligned, so there the whole entry is padded to 8.
  constexpr size_t kNameAlign = 64;
  const size_t size = type == 0 ? kBuildIdEntryFixedSize + (filename.size() + 1 + kNameAlign - 1) /
                                                               kNameAlign * kNameAlign
                                : (kBuildIdEntryFixedSize + filename.size() + 1 + 7) / 8 * 8;
  std::vector<uint8_t> out(size, 0);
  const size_t n = std::min(id.size(), kBuildIdMax);
  e.put_u32(out.data(), type);
  e.put_u16(out.data() + 4, misc | kMiscBuildIdSize);
  e.put_u16(out.data() + 6, static_cast<uint16_t>(out.size()));
  e.put_u32(out.data() + 8, static_cast<uint32_t>(pid));
  std::copy_n(id.begin(), n, out.begin() + 12);
  out[32] = static_cast<uint8_t>(n);
  std::copy(filename.begin(), filename.end(), out.begin() + kBuildIdEntryFixedSize);
  return out;
}

absl::StatusOr<CompressionInfo> decode_compressed(const FeatureBytes& f) {
  Cursor c(f);
  CompressionInfo info;
  for (uint32_t* field : {&info.version, &info.type, &info.level, &info.ratio, &info.mmap_len}) {
    auto v = c.u32();
    if (!v.ok()) return v.status();
    *field = *v;
  }
  return info;
}

std::vector<uint8_t> with_compression_level(const FeatureBytes& f, uint32_t level) {
  constexpr size_t kLevelAt = 8;  // u32 version, u32 type, u32 level, ...
  if (f.bytes.size() < kLevelAt + 4) return {};
  std::vector<uint8_t> out(f.bytes.begin(), f.bytes.end());
  f.endian.put_u32(out.data() + kLevelAt, level);
  return out;
}

std::optional<uint64_t> dir_format_version(const FeatureBytes& f) {
  Cursor c(f);
  auto v = c.u64();
  if (!v.ok()) return std::nullopt;
  return *v;
}

absl::StatusOr<std::vector<AuxtraceIndexEntry>> decode_auxtrace_index(const FeatureBytes& f) {
  Cursor c(f);
  auto n = c.u64();
  if (!n.ok()) return n.status();
  if (*n > f.bytes.size() / 16) {
    return malformed_at(f.offset, "auxtrace index claims ", *n, " entries in ", f.bytes.size(),
                        " bytes");
  }
  std::vector<AuxtraceIndexEntry> entries;
  for (uint64_t i = 0; i < *n; ++i) {
    auto off = c.u64();
    auto sz = c.u64();
    if (!off.ok()) return off.status();
    if (!sz.ok()) return sz.status();
    entries.push_back({*off, *sz});
  }
  return entries;
}

std::vector<uint8_t> encode_auxtrace_index(const std::vector<AuxtraceIndexEntry>& entries,
                                           const Endian& e) {
  std::vector<uint8_t> out(8 + 16 * entries.size());
  e.put_u64(out.data(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    e.put_u64(out.data() + 8 + 16 * i, entries[i].file_offset);
    e.put_u64(out.data() + 16 + 16 * i, entries[i].size);
  }
  return out;
}

absl::StatusOr<ClockData> decode_clock_data(const FeatureBytes& f) {
  Cursor c(f);
  ClockData d;
  auto version = c.u32();
  auto clockid = c.u32();
  auto wall = c.u64();
  auto clk = c.u64();
  for (const absl::Status& s : {version.status(), clockid.status(), wall.status(), clk.status()}) {
    if (!s.ok()) return s;
  }
  d.version = *version;
  d.clockid = static_cast<int32_t>(*clockid);
  d.wall_clock_ns = *wall;
  d.clockid_time_ns = *clk;
  return d;
}

absl::StatusOr<EMachine> decode_e_machine(const FeatureBytes& f) {
  Cursor c(f);
  auto machine = c.u32();
  if (!machine.ok()) return machine.status();
  auto flags = c.u32();
  if (!flags.ok()) return flags.status();
  return EMachine{*machine, *flags};
}

}  // namespace pdfix::format
