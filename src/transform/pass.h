// The pass interface. A pass sees the records of a recording in order and, for each, emits what
// should stand in its place: the record itself, a rebuilt one, several, or nothing; it may hold
// records back to see a group of them first. At the end it may edit feature sections. That is all
// a pass says: whether compressed data can be copied as it was is the pipeline's question (see
// pipeline.h). See src/passes/ for real passes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::transform {

// Where a pass sends its output records; the next pass, or the writer.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // `r.bytes` (and `r.map`) need only live until emit() returns.
  virtual absl::Status emit(const RecordRef& r) = 0;
};

// Feature sections a pass replaces (or adds, or removes) in file mode; the writer lays them out.
struct FeatureEdits {
  std::map<int, std::vector<uint8_t>> replace;
  std::set<int> remove;
  // The attrs section anew, entries of `attr_size` bytes (perf_event_attr and its ids' section),
  // no longer than the input's: it is written where the input's was, so nothing else moves.
  std::optional<std::vector<uint8_t>> attrs;
  uint64_t attr_size = 0;
};

// What a pass found that `pdfix check` tells besides the records it changes: a file the pass needs
// and read, or could not read.
struct PassFinding {
  uint64_t offset = 0;  // of the record it is about
  uint32_t part = 0;    // see RecordRef::part
  std::string record;   // "MMAP2"
  std::string what;
  bool repaired = false;  // the pass repairs it; else it stays after fix
  // Set: why the pass leaves maps of this file without a build-id. `check` tells it with what
  // samples hit, not on its own.
  std::string about;
  // With `about`: the file is proven the mapped one and has no build-id of its own, so
  // fix --archive/--store keep it by path and content.
  bool kept_by_path = false;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;

  // Whether the pass looks at records of this type at all: it is given only those. Records no
  // pass wants go straight to the writer, which matters when a recording holds millions of
  // samples; those other passes want go by this one (after what it holds).
  virtual bool wants(uint32_t type) const = 0;
  // A pass whose answers to wants() change during the run (one that wants samples only while it
  // waits for the recording's time to reach something it holds) counts the changes in a counter
  // of its own and gives it here, once: the sweep asks wants() anew when the count moves.
  // nullptr: they never change (the sweep then looks at nothing per record).
  virtual const uint64_t* wants_changes() const { return nullptr; }
  // Emits what stands in place of `r` (a record of a wanted type; a map has `r.map` decoded).
  // The session knows what the records before it taught: the build-id table, the kernel's start.
  virtual absl::Status rewrite(const RecordRef& r, const Session& s, RecordSink& out) = 0;
  // A pass that holds records back says so here: before a record the pass does not see goes by,
  // the pipeline calls release(), so that records leave in the order they came.
  virtual bool holding() const { return false; }
  virtual absl::Status release(const Session& /*s*/, RecordSink& /*out*/) {
    return absl::OkStatus();
  }
  // After the last record (and a last release()): emit anything else; in file mode, edit feature
  // sections with what the rewrite learned (the writer lays features out after the data).
  virtual absl::Status finish(const Session& /*s*/, RecordSink& /*out*/, FeatureEdits& /*edits*/) {
    return absl::OkStatus();
  }
  // A pass writing for a reader that cannot take the input's compressed records names the type
  // zstd data must be written as: COMPRESSED (81), or 0 for plain records.
  virtual std::optional<uint32_t> compressed_output(const Session& /*s*/) const {
    return std::nullopt;
  }
  // After the last record: what `check` should tell that no record change says.
  virtual std::vector<PassFinding> findings() const { return {}; }
};

// The passes of one run, in order.
using PassChain = std::vector<std::unique_ptr<Pass>>;

}  // namespace pdfix::transform
