// What a pipeline writes, shown to one that only looks: every record as it goes to the writer, in
// the order written, those copied as untouched runs included, then the features as the passes
// left them. `fix --archive` and `fix --store` list the binaries their output names so
// (inspect/listing_tap.h), without reading the output again and without taking the untouched runs
// apart: they are still copied (or cloned) whole.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "transform/pass.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::transform {

class RecordTap {
 public:
  virtual ~RecordTap() = default;
  // The record types it is shown; the others go by unseen.
  virtual bool taps(uint32_t type) const = 0;
  // A record as written: a pass's, or the input's own. Compressed containers are not shown, the
  // records inside them are; nor are the bytes after a stream's last record.
  virtual absl::Status record(const RecordRef& r, const Session& s) = 0;
  // After the last record, with the feature sections and attrs as the passes edited them.
  virtual absl::Status end(const Session& s, const FeatureEdits& edits) = 0;
};

}  // namespace pdfix::transform
