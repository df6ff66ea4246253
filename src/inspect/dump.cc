#include "inspect/dump.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "format/feature.h"
#include "format/perf_version.h"
#include "format/record_type.h"
#include "format/records.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_os_ostream.h"
#include "transform/open_session.h"

namespace pdfix::inspect {
namespace {

std::string hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

// The largest perf_event_attr the machine's perf (6.1) reads; it refuses larger ones.
uint32_t perf61_attr_size() { return format::attr_size_read_by({6, 1}); }

// An attr's stored size, and the bytes past perf 6.1's 128 (config3, config4, ...) in hex.
void describe_attr(std::span<const uint8_t> attr, const format::Endian& e, llvm::json::Object& o) {
  const std::optional<uint32_t> stored = format::stored_attr_size(attr, e);
  if (!stored) return;
  const uint32_t size = *stored;
  o["attr_size"] = static_cast<int64_t>(size);
  const uint32_t end = std::min<uint32_t>(size, static_cast<uint32_t>(attr.size()));
  if (end > perf61_attr_size()) {
    o["attr_tail"] = absl::BytesToHexString(absl::string_view(
        reinterpret_cast<const char*>(attr.data() + perf61_attr_size()), end - perf61_attr_size()));
  }
}

// Adds the decoded fields of the record types pdfix understands; others get header fields only.
absl::Status describe(const transform::RecordRef& r, const transform::Session& s,
                      llvm::json::Object& o) {
  const format::Endian& e = s.endian();
  const uint32_t trailer = s.trailer_size(r);
  switch (r.header.type) {
    case format::kMmap:
    case format::kMmap2: {
      auto m = format::decode_mmap(r.bytes, e, trailer, r.offset);
      if (!m.ok()) return m.status();
      o["cpumode"] = std::string(format::cpumode_name(m->misc));
      o["pid"] = static_cast<int64_t>(static_cast<int32_t>(m->pid));
      o["tid"] = static_cast<int64_t>(static_cast<int32_t>(m->tid));
      o["start"] = hex(m->start);
      o["len"] = hex(m->len);
      o["pgoff"] = hex(m->pgoff);
      if (m->has_build_id()) {
        o["build_id"] = absl::BytesToHexString(
            absl::string_view(reinterpret_cast<const char*>(m->build_id.data()), m->build_id_size));
      } else if (m->is_mmap2) {
        o["dev"] = absl::StrCat(absl::Hex(m->maj), ":", absl::Hex(m->min));
        o["ino"] = static_cast<int64_t>(m->ino);
      }
      if (m->is_mmap2) {
        o["prot"] = static_cast<int64_t>(m->prot);
        o["flags"] = static_cast<int64_t>(m->flags);
      }
      if (m->misc & format::kMiscMmapData) o["data"] = true;
      o["filename"] = format::escape_invalid_utf8(m->filename);
      return absl::OkStatus();
    }
    case format::kComm: {
      auto c = format::decode_comm(r.bytes, e, trailer, r.offset);
      if (!c.ok()) return c.status();
      o["pid"] = static_cast<int64_t>(c->pid);
      o["tid"] = static_cast<int64_t>(c->tid);
      o["comm"] = format::escape_invalid_utf8(c->comm);
      return absl::OkStatus();
    }
    case format::kFork:
    case format::kExit: {
      auto t = format::decode_task(r.bytes, e, r.offset);
      if (!t.ok()) return t.status();
      o["pid"] = static_cast<int64_t>(t->pid);
      o["ppid"] = static_cast<int64_t>(t->ppid);
      o["tid"] = static_cast<int64_t>(t->tid);
      o["ptid"] = static_cast<int64_t>(t->ptid);
      o["time"] = static_cast<int64_t>(t->time);
      return absl::OkStatus();
    }
    case format::kSample: {
      const format::EventAttr* a = s.attr_for(r);
      if (a == nullptr) return absl::OkStatus();
      auto h = format::decode_sample_head(r.bytes, e, a->sample_type, r.offset);
      if (!h.ok()) return h.status();
      o["cpumode"] = std::string(format::cpumode_name(r.header.misc));
      if (a->sample_type & format::kSampleIp) o["ip"] = hex(h->ip);
      if (a->sample_type & format::kSampleTid) {
        o["pid"] = static_cast<int64_t>(static_cast<int32_t>(h->pid));
        o["tid"] = static_cast<int64_t>(static_cast<int32_t>(h->tid));
      }
      if (a->sample_type & format::kSampleTime) o["time"] = static_cast<int64_t>(h->time);
      if (a->sample_type & format::kSampleCpu) o["cpu"] = static_cast<int64_t>(h->cpu);
      if (a->sample_type & format::kSamplePeriod) o["period"] = static_cast<int64_t>(h->period);
      if (a->sample_type & format::kSampleCallchain) {
        std::vector<uint64_t> chain;
        absl::Status read =
            format::sample_callchain(r.bytes, e, a->sample_type, a->read_format, r.offset, chain);
        if (!read.ok()) return read;
        o["callchain"] = static_cast<int64_t>(chain.size());
        if (auto cookie = format::deferred_cookie(chain)) o["deferred"] = hex(*cookie);
      }
      return absl::OkStatus();
    }
    case format::kCallchainDeferred: {
      auto d = format::decode_callchain_deferred(r.bytes, e, s.trailer_size(r), r.offset);
      if (!d.ok()) return d.status();
      o["deferred"] = hex(d->cookie);
      o["callchain"] = static_cast<int64_t>(d->ips.size());
      return absl::OkStatus();
    }
    case format::kHeaderAttr:
      describe_attr(r.bytes.subspan(format::kRecordHeaderSize), e, o);
      return absl::OkStatus();
    case format::kHeaderFeature: {
      const std::optional<uint64_t> id = format::header_feature_id(r.bytes, e);
      if (!id) return absl::OkStatus();
      o["data"] = !format::header_feature_payload(r.bytes)
                      ? absl::StrCat("end of features (", *id, ")")
                      : format::feature_name(
                            static_cast<int>(std::min<uint64_t>(*id, format::kFeatureBits)));
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

void print_text(const transform::RecordRef& r, const llvm::json::Object& o, std::ostream& os) {
  if (auto file = o.getString("file")) os << file->str() << ":";
  os << hex(r.offset);
  if (r.inner) os << " [zstd +" << hex(r.inner_offset) << "]";
  os << " " << (r.trailing ? "TRAILING_BYTES" : format::record_type_name(r.header.type))
     << " misc=" << hex(r.header.misc) << " size=" << r.bytes.size();
  // Keys in a stable, readable order: the order describe() would list them in.
  static constexpr const char* kOrder[] = {
      "cpumode", "pid",   "ppid", "tid",      "ptid",      "ip",       "time",      "cpu",
      "period",  "start", "len",  "pgoff",    "dev",       "ino",      "build_id",  "prot",
      "flags",   "data",  "comm", "filename", "callchain", "deferred", "attr_size", "attr_tail"};
  for (const char* key : kOrder) {
    const llvm::json::Value* v = o.get(key);
    if (v == nullptr) continue;
    os << " " << key << "=";
    if (auto str = v->getAsString()) {
      os << str->str();
    } else if (auto i = v->getAsInteger()) {
      os << *i;
    } else if (auto b = v->getAsBoolean()) {
      os << (*b ? "yes" : "no");
    }
  }
  os << "\n";
}

}  // namespace

absl::Status dump_records(io::Input& in, bool json, std::ostream& os) {
  auto session = transform::open_session(in);
  if (!session.ok()) return session.status();
  auto reader = transform::make_reader(in, *session, {.expand_compressed = true});
  llvm::raw_os_ostream jout(os);
  // A file's attrs are no records, but one larger than perf 6.1's 128 bytes gets a line of its own
  // before them: what is past 128 is what older readers refuse.
  const format::FileHeader& h = session->header();
  const std::span<const uint8_t> attrs = session->attrs_section();
  const bool large = h.attr_size > format::kFileSectionSize + perf61_attr_size();
  for (uint64_t at = 0; large && at + h.attr_size <= attrs.size(); at += h.attr_size) {
    llvm::json::Object o{{"offset", hex(h.attrs.offset + at)}, {"type", "ATTR"}};
    describe_attr(attrs.subspan(at, h.attr_size - format::kFileSectionSize), h.endian, o);
    if (json) {
      jout << llvm::json::Value(std::move(o)) << "\n";
    } else {
      os << hex(h.attrs.offset + at) << " ATTR (attrs section)";
      for (const char* key : {"attr_size", "attr_tail"}) {
        if (auto v = o.getString(key)) os << " " << key << "=" << v->str();
        if (auto v = o.getInteger(key)) os << " " << key << "=" << *v;
      }
      os << "\n";
    }
  }
  while (true) {
    auto r = reader->next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) break;
    const transform::RecordRef& rec = **r;
    llvm::json::Object o{{"offset", hex(rec.offset)},
                         {"type", rec.trailing ? std::string("TRAILING_BYTES")
                                               : format::record_type_name(rec.header.type)},
                         {"misc", hex(rec.header.misc)},
                         {"size", static_cast<int64_t>(rec.bytes.size())}};
    // In a directory recording, offsets are in the data.N file the record came from.
    if (rec.part > 0) o["file"] = in.part_name(rec.part - 1);
    if (rec.inner) o["inner_offset"] = hex(rec.inner_offset);
    if (!rec.trailing) {
      if (auto s = describe(rec, *session, o); !s.ok()) return s;
    }
    if (json) {
      jout << llvm::json::Value(std::move(o)) << "\n";
    } else {
      print_text(rec, o, os);
    }
  }
  return absl::OkStatus();
}

}  // namespace pdfix::inspect
