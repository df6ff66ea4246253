// The EVENT_DESC feature: perf's second copy of each event's attr, with its name and ids. perf
// reads samples with the attrs section (or a stream's ATTR records); other readers take the attrs
// from here, the newer, named copy. The two must agree, or those readers parse every sample with a
// layout the samples no longer have.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/feature.h"

namespace pdfix::format {

// EVENT_DESC as perf writes it: {u32 nr, u32 attr_size, nr x {attr[attr_size], u32 nr_ids,
// string name, u64 ids[nr_ids]}}. An event's attr as raw bytes, kept as written.
struct EventDescEntry {
  std::span<const uint8_t> attr;
  std::string name;
  std::vector<uint64_t> ids;
};
absl::StatusOr<std::vector<EventDescEntry>> decode_event_desc(const FeatureBytes& f);

// EVENT_DESC anew: each event's attr replaced by attrs[i] (all of one size, the attrs section's
// entries or a stream's ATTR records' attrs), its ids by ids[i]; names kept from `desc`. Fails when
// the two do not list the same number of events: which name goes with which attr is then unknown.
absl::StatusOr<std::vector<uint8_t>> event_desc_with_attrs(
    const FeatureBytes& desc, const std::vector<std::span<const uint8_t>>& attrs,
    const std::vector<std::vector<uint64_t>>& ids);

// How EVENT_DESC differs from the attrs (and their ids), field by field, one line a difference
// ("event 0 (cycles): sample_type 0x...|REGS_USER differs from the attrs' 0x..."); empty when
// they agree.
std::vector<std::string> event_desc_disagreements(
    const FeatureBytes& desc, const std::vector<std::span<const uint8_t>>& attrs,
    const std::vector<std::vector<uint64_t>>& ids);

}  // namespace pdfix::format
