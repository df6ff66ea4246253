// The file agrees with itself: features that repeat what the attrs say are written from the attrs
// as they go out. perf parses samples with the attrs section (a stream's ATTR records); other
// readers take the attrs from EVENT_DESC, so a pass that changes an attr (unwind, compat) and
// leaves EVENT_DESC as perf wrote it makes a file those readers misparse from its first sample.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "transform/pass.h"
#include "transform/session.h"

namespace pdfix::transform {

// File mode, after every pass's finish(): EVENT_DESC anew from the attrs the writer will write
// (the passes' edits, else the input's), where the two differ; perf's own disagreement too.
// Nothing when the file has no EVENT_DESC, a pass removes it, or its events cannot be matched
// with the attrs one to one (the summary of `check` says so).
void agree_event_desc(const Session& s, FeatureEdits& edits);

// What differs between the input's EVENT_DESC and its attrs, one line a difference; empty when
// they agree or there is no EVENT_DESC. For `check`.
std::vector<std::string> event_desc_disagreements(const Session& s);

// Pipe mode: EVENT_DESC comes as a HEADER_FEATURE record, the attrs as ATTR records. This tracks
// the attrs that went out and rewrites the feature record to agree with them.
class StreamAgreement {
 public:
  // An ATTR record as it goes out.
  void attr_out(std::span<const uint8_t> record, const format::Endian& e);
  // The EVENT_DESC feature record anew, or nullopt to write it as it is.
  std::optional<std::vector<uint8_t>> event_desc(std::span<const uint8_t> record,
                                                 const format::Endian& e) const;
  // How an EVENT_DESC feature record differs from the ATTR records before it (for `check`).
  std::vector<std::string> disagreements(std::span<const uint8_t> record,
                                         const format::Endian& e) const;

 private:
  std::vector<std::vector<uint8_t>> attrs_;
  std::vector<std::vector<uint64_t>> ids_;
};

}  // namespace pdfix::transform
