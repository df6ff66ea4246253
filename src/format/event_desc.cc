#include "format/event_desc.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "format/attr.h"
#include "format/error.h"

namespace pdfix::format {
namespace {

// perf's do_write_string pads a name, NUL included, to this.
constexpr uint32_t kNameAlign = 64;

class Reader {
 public:
  explicit Reader(const FeatureBytes& f) : f_(f) {}
  uint64_t offset() const { return f_.offset + pos_; }
  absl::StatusOr<std::span<const uint8_t>> take(uint64_t n) {
    if (f_.bytes.size() - pos_ < n) {
      return malformed_at(offset(), "event_desc ends ", n - (f_.bytes.size() - pos_),
                          " bytes early");
    }
    pos_ += n;
    return f_.bytes.subspan(pos_ - n, n);
  }
  absl::StatusOr<uint32_t> u32() {
    auto b = take(4);
    if (!b.ok()) return b.status();
    return f_.endian.u32(b->data());
  }
  absl::StatusOr<uint64_t> u64() {
    auto b = take(8);
    if (!b.ok()) return b.status();
    return f_.endian.u64(b->data());
  }

 private:
  const FeatureBytes& f_;
  uint64_t pos_ = 0;
};

void put32(std::vector<uint8_t>& out, const Endian& e, uint32_t v) {
  out.resize(out.size() + 4);
  e.put_u32(out.data() + out.size() - 4, v);
}

void put64(std::vector<uint8_t>& out, const Endian& e, uint64_t v) {
  out.resize(out.size() + 8);
  e.put_u64(out.data() + out.size() - 8, v);
}

std::string sample_type_text(uint64_t t) {
  static constexpr std::pair<uint64_t, const char*> kBits[] = {{kSampleIp, "IP"},
                                                               {kSampleTid, "TID"},
                                                               {kSampleTime, "TIME"},
                                                               {kSampleAddr, "ADDR"},
                                                               {kSampleRead, "READ"},
                                                               {kSampleCallchain, "CALLCHAIN"},
                                                               {kSampleId, "ID"},
                                                               {kSampleCpu, "CPU"},
                                                               {kSamplePeriod, "PERIOD"},
                                                               {kSampleStreamId, "STREAM_ID"},
                                                               {kSampleRaw, "RAW"},
                                                               {kSampleBranchStack, "BRANCH_STACK"},
                                                               {kSampleRegsUser, "REGS_USER"},
                                                               {kSampleStackUser, "STACK_USER"},
                                                               {kSampleIdentifier, "IDENTIFIER"}};
  std::string out;
  for (auto [bit, name] : kBits) {
    if ((t & bit) == 0) continue;
    absl::StrAppend(&out, out.empty() ? "" : "|", name);
    t &= ~bit;
  }
  if (t != 0) absl::StrAppend(&out, out.empty() ? "" : "|", "0x", absl::Hex(t));
  return out;
}

}  // namespace

absl::StatusOr<std::vector<EventDescEntry>> decode_event_desc(const FeatureBytes& f) {
  Reader r(f);
  auto nr = r.u32();
  if (!nr.ok()) return nr.status();
  auto attr_size = r.u32();
  if (!attr_size.ok()) return attr_size.status();
  std::vector<EventDescEntry> out;
  for (uint32_t i = 0; i < *nr; ++i) {
    EventDescEntry ev;
    auto attr = r.take(*attr_size);
    if (!attr.ok()) return attr.status();
    ev.attr = *attr;
    auto nr_ids = r.u32();
    if (!nr_ids.ok()) return nr_ids.status();
    auto len = r.u32();
    if (!len.ok()) return len.status();
    auto name = r.take(*len);
    if (!name.ok()) return name.status();
    const auto* p = reinterpret_cast<const char*>(name->data());
    ev.name.assign(p, std::find(p, p + name->size(), '\0'));
    for (uint32_t k = 0; k < *nr_ids; ++k) {
      auto id = r.u64();
      if (!id.ok()) return id.status();
      ev.ids.push_back(*id);
    }
    out.push_back(std::move(ev));
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> event_desc_with_attrs(
    const FeatureBytes& desc, const std::vector<std::span<const uint8_t>>& attrs,
    const std::vector<std::vector<uint64_t>>& ids) {
  auto events = decode_event_desc(desc);
  if (!events.ok()) return events.status();
  if (events->size() != attrs.size() || ids.size() != attrs.size() || attrs.empty()) {
    return malformed_at(desc.offset, "event_desc lists ", events->size(), " events, the attrs ",
                        attrs.size());
  }
  const Endian& e = desc.endian;
  std::vector<uint8_t> out;
  put32(out, e, static_cast<uint32_t>(attrs.size()));
  put32(out, e, static_cast<uint32_t>(attrs.front().size()));
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (attrs[i].size() != attrs.front().size()) {
      return malformed_at(desc.offset, "the attrs are not of one size");
    }
    out.insert(out.end(), attrs[i].begin(), attrs[i].end());
    put32(out, e, static_cast<uint32_t>(ids[i].size()));
    const std::string& name = (*events)[i].name;
    const uint32_t len =
        (static_cast<uint32_t>(name.size()) + kNameAlign) / kNameAlign * kNameAlign;
    put32(out, e, len);
    out.insert(out.end(), name.begin(), name.end());
    out.resize(out.size() + len - name.size(), 0);
    for (uint64_t id : ids[i]) put64(out, e, id);
  }
  return out;
}

std::vector<std::string> event_desc_disagreements(
    const FeatureBytes& desc, const std::vector<std::span<const uint8_t>>& attrs,
    const std::vector<std::vector<uint64_t>>& ids) {
  auto events = decode_event_desc(desc);
  if (!events.ok()) return {absl::StrCat("event_desc cannot be read: ", events.status().message())};
  if (events->size() != attrs.size()) {
    return {absl::StrCat("event_desc lists ", events->size(), " events, the attrs ", attrs.size())};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < attrs.size(); ++i) {
    const EventDescEntry& ev = (*events)[i];
    const std::string who = absl::StrCat("event ", i, " (", ev.name, ")");
    const size_t before = out.size();
    auto d = parse_attr(ev.attr.data(), ev.attr.size(), desc.endian, desc.offset);
    auto a = parse_attr(attrs[i].data(), attrs[i].size(), desc.endian, 0);
    if (!d.ok() || !a.ok()) {
      out.push_back(absl::StrCat(who, ": an attr cannot be read"));
      continue;
    }
    auto differ = [&](const char* field, const std::string& mine, const std::string& theirs) {
      if (mine != theirs) {
        out.push_back(
            absl::StrCat(who, ": ", field, " ", mine, " differs from the attrs' ", theirs));
      }
    };
    auto hex = [](uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); };
    differ("attr size", absl::StrCat(ev.attr.size()), absl::StrCat(attrs[i].size()));
    differ("type", absl::StrCat(d->type), absl::StrCat(a->type));
    differ("config", hex(d->config), hex(a->config));
    differ("sample_period", absl::StrCat(d->sample_period), absl::StrCat(a->sample_period));
    differ("sample_type", sample_type_text(d->sample_type), sample_type_text(a->sample_type));
    differ("read_format", hex(d->read_format), hex(a->read_format));
    differ("flags", hex(d->flags), hex(a->flags));
    differ("branch_sample_type", hex(d->branch_sample_type), hex(a->branch_sample_type));
    differ("sample_regs_user", hex(d->sample_regs_user), hex(a->sample_regs_user));
    differ("sample_stack_user", absl::StrCat(d->sample_stack_user),
           absl::StrCat(a->sample_stack_user));
    differ("clockid", absl::StrCat(d->clockid), absl::StrCat(a->clockid));
    if (ev.attr.size() == attrs[i].size() &&
        !std::equal(ev.attr.begin(), ev.attr.end(), attrs[i].begin()) && out.size() == before) {
      out.push_back(absl::StrCat(who, ": the attr's other bytes differ"));
    }
    if (i < ids.size() && ev.ids != ids[i]) {
      out.push_back(
          absl::StrCat(who, ": ", ev.ids.size(), " ids differ from the attrs' ", ids[i].size()));
    }
  }
  return out;
}

}  // namespace pdfix::format
