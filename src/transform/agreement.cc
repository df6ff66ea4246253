#include "transform/agreement.h"

#include "format/attr.h"
#include "format/event_desc.h"
#include "format/feature.h"
#include "format/records.h"

namespace pdfix::transform {
namespace {

struct Attrs {
  std::vector<std::span<const uint8_t>> attrs;
  std::vector<std::vector<uint64_t>> ids;
};

// The attrs section's entries (`slot` bytes each: the attr, then its ids' file section) and each
// event's ids, which no pass changes.
Attrs attrs_of(const Session& s, std::span<const uint8_t> section, uint64_t slot) {
  Attrs out;
  if (slot <= format::kFileSectionSize) return out;
  for (uint64_t at = 0; at + slot <= section.size(); at += slot) {
    out.attrs.push_back(section.subspan(at, slot - format::kFileSectionSize));
  }
  for (const format::EventAttr& a : s.attrs()) out.ids.push_back(a.ids);
  return out;
}

Attrs written_attrs(const Session& s, const FeatureEdits& edits) {
  if (edits.attrs) return attrs_of(s, *edits.attrs, edits.attr_size);
  return attrs_of(s, s.attrs_section(), s.header().attr_size);
}

}  // namespace

void agree_event_desc(const Session& s, FeatureEdits& edits) {
  if (s.pipe() || edits.remove.contains(format::kFeatEventDesc)) return;
  std::optional<format::FeatureBytes> desc = s.feature(format::kFeatEventDesc);
  if (!desc) return;
  std::vector<uint8_t> replaced;
  if (auto it = edits.replace.find(format::kFeatEventDesc); it != edits.replace.end()) {
    replaced = it->second;
    desc->bytes = replaced;
  }
  const Attrs a = written_attrs(s, edits);
  if (format::event_desc_disagreements(*desc, a.attrs, a.ids).empty()) return;
  if (auto anew = format::event_desc_with_attrs(*desc, a.attrs, a.ids); anew.ok()) {
    edits.replace[format::kFeatEventDesc] = *std::move(anew);
  }
}

std::vector<std::string> event_desc_disagreements(const Session& s) {
  std::optional<format::FeatureBytes> desc = s.feature(format::kFeatEventDesc);
  if (!desc || s.pipe()) return {};
  const Attrs a = written_attrs(s, {});
  return format::event_desc_disagreements(*desc, a.attrs, a.ids);
}

void StreamAgreement::attr_out(std::span<const uint8_t> record, const format::Endian& e) {
  const std::span<const uint8_t> body = record.subspan(format::kRecordHeaderSize);
  std::optional<uint32_t> size = format::stored_attr_size(body, e);
  if (!size) return;
  const uint32_t stored = *size == 0 ? format::kAttrSizeVer0 : *size;
  if (stored > body.size()) return;
  attrs_.emplace_back(body.begin(), body.begin() + stored);
  std::vector<uint64_t>& ids = ids_.emplace_back();
  for (size_t at = stored; at + 8 <= body.size(); at += 8) ids.push_back(e.u64(body.data() + at));
}

std::optional<std::vector<uint8_t>> StreamAgreement::event_desc(std::span<const uint8_t> record,
                                                                const format::Endian& e) const {
  if (disagreements(record, e).empty()) return std::nullopt;
  const format::FeatureBytes desc{*format::header_feature_payload(record), e, 0};
  const std::vector<std::span<const uint8_t>> attrs(attrs_.begin(), attrs_.end());
  auto anew = format::event_desc_with_attrs(desc, attrs, ids_);
  if (!anew.ok()) return std::nullopt;
  const uint16_t misc = format::read_record_header(e, record.data()).misc;
  return format::encode_header_feature(e, misc, format::kFeatEventDesc, *anew);
}

std::vector<std::string> StreamAgreement::disagreements(std::span<const uint8_t> record,
                                                        const format::Endian& e) const {
  const auto payload = format::header_feature_payload(record);
  const std::optional<uint64_t> id = format::header_feature_id(record, e);
  if (!payload || id != static_cast<uint64_t>(format::kFeatEventDesc) || attrs_.empty()) return {};
  const std::vector<std::span<const uint8_t>> attrs(attrs_.begin(), attrs_.end());
  return format::event_desc_disagreements({*payload, e, 0}, attrs, ids_);
}

}  // namespace pdfix::transform
