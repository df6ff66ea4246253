#include "inspect/listing_tap.h"

#include <algorithm>
#include <vector>

#include "format/attr.h"
#include "format/feature.h"
#include "format/record_type.h"

namespace pdfix::inspect {
namespace {

bool copies_user_stack(const format::EventAttr& a) {
  return (a.sample_type & format::kSampleStackUser) != 0;
}

// Whether an attrs section (entries of `attr_size` bytes) has an event copying user stacks.
bool section_copies_user_stacks(std::span<const uint8_t> section, uint64_t attr_size,
                                const format::Endian& e) {
  if (attr_size == 0) return false;
  for (uint64_t at = 0; at + attr_size <= section.size(); at += attr_size) {
    auto a = format::parse_attr(section.data() + at, attr_size, e, at);
    if (a.ok() && copies_user_stack(*a)) return true;
  }
  return false;
}

}  // namespace

bool ListingTap::taps(uint32_t type) const {
  switch (type) {
    case format::kMmap:
    case format::kMmap2:
    case format::kFork:
    case format::kComm:
    case format::kFinishedRound:
    case format::kFinishedInit:
    case format::kHeaderBuildId:
    case format::kHeaderAttr:
    case format::kHeaderFeature:
      return true;
    case format::kSample:
      // Before the session is known: whether the listing may need them.
      return options_.hits || options_.count_samples;
    default:
      return false;
  }
}

DsoLister& ListingTap::lister(const transform::Session& s) {
  if (!lister_) lister_.emplace(s, options_);
  return *lister_;
}

absl::Status ListingTap::record(const transform::RecordRef& r, const transform::Session& s) {
  if (r.header.type == format::kHeaderAttr) {
    auto a = format::decode_attr_record(r.bytes, s.endian(), r.offset);
    stream_user_stacks_ = stream_user_stacks_ || (a.ok() && copies_user_stack(*a));
  }
  return lister(s).add(r, s);
}

absl::Status ListingTap::end(const transform::Session& s, const transform::FeatureEdits& edits) {
  bool user_stacks = stream_user_stacks_;
  if (!s.pipe()) {
    std::vector<format::BuildIdEntry> table;
    if (auto it = edits.replace.find(format::kFeatBuildId); it != edits.replace.end()) {
      auto entries = format::decode_build_id_table({it->second, s.endian(), 0});
      if (entries.ok()) table = *std::move(entries);
    } else if (!edits.remove.contains(format::kFeatBuildId)) {
      for (const auto& e : s.build_id_table().entries) {
        if (!e.from_record) table.push_back(e);
      }
    }
    lister(s).add_table(table);
    user_stacks = edits.attrs
                      ? section_copies_user_stacks(*edits.attrs, edits.attr_size, s.endian())
                      : std::any_of(s.attrs().begin(), s.attrs().end(), copies_user_stack);
  }
  listing_ = lister(s).finish(s, user_stacks);
  return absl::OkStatus();
}

}  // namespace pdfix::inspect
