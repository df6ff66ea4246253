// The pass interface. A pass sees every record of a recording (and may edit feature sections); for
// each record it emits what should stand in its place: the record itself, a rebuilt one, several,
// or nothing. See src/passes/ for real passes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "transform/session.h"

namespace pdfix::transform {

// Where a pass sends its output records; the next pass, or the writer.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // `r.bytes` need only live until emit() returns. A rebuilt record has `original` false.
  virtual absl::Status emit(const RecordRef& r) = 0;
};

// Feature sections a pass replaces (or adds) in file mode; the writer lays them out.
struct FeatureEdits {
  std::map<int, std::vector<uint8_t>> replace;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;

  // True if the pass must see every record of this recording before rewriting any: then, in file
  // mode, analyze() runs over the whole recording first (a second read of it, so say true only
  // when it matters). In pipe mode analyze() runs on each record just before rewrite() (the
  // synthesized records a pass needs come first in a stream).
  virtual bool needs_analysis(const Session& /*s*/) const { return false; }
  // Whether the pass looks at records of this type at all. Records no pass wants go straight to
  // the writer, which matters when a recording holds millions of samples.
  virtual bool wants(uint32_t /*type*/) const { return true; }
  virtual absl::Status analyze(const RecordRef& /*r*/, const Session& /*s*/) {
    return absl::OkStatus();
  }
  // Between analysis and rewrite: decide, and edit feature sections (file mode).
  virtual absl::Status plan(const Session& /*s*/, FeatureEdits& /*edits*/) {
    return absl::OkStatus();
  }
  // Whether rewrite() may emit anything but the records it is given. When no pass changes
  // records, compressed data is copied as it was instead of re-compressed.
  virtual bool changes_records() const = 0;

  virtual absl::Status rewrite(const RecordRef& r, const Session& /*s*/, RecordSink& out) {
    return out.emit(r);
  }
  // A pass may hold records back to see a group of them before deciding (module maps, say), as
  // long as it says so here: before a record the pass does not see goes by, the pipeline calls
  // release(), so that records leave in the order they came.
  virtual bool holding() const { return false; }
  virtual absl::Status release(const Session& /*s*/, RecordSink& /*out*/) {
    return absl::OkStatus();
  }
  // After the last record: emit anything held back; in file mode, edit feature sections with what
  // the rewrite learned (the writer lays features out after the data).
  virtual absl::Status finish(const Session& /*s*/, RecordSink& /*out*/, FeatureEdits& /*edits*/) {
    return absl::OkStatus();
  }
};

}  // namespace pdfix::transform
