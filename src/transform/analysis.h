// What a chain must know of the whole recording before its first record, read in one sweep of
// its own. Records come per CPU, so what perf applies before a record (by time) may come after it
// in the file; and whether perf's one build-id for a path can be a map's depends on how many files
// the whole recording maps there. A stream is read once: it has no analysis, and the passes make
// do with what they have met.
#pragma once

#include <bitset>
#include <span>

#include "io/input.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::transform {

class Analysis {
 public:
  virtual ~Analysis() = default;
  // The record types it reads (format::RecordType); the reader skips the rest.
  virtual std::bitset<128> wanted() const = 0;
  // Each wanted record, in file order, with a session of the sweep's own that has learnt
  // everything before it.
  virtual void see(const RecordRef& r, Session& s) = 0;
};

// Runs `analyses` over a mapped input, compressed records expanded; over a stream it does nothing.
// A recording that cannot be read whole gives what it has: the passes meet the same error.
void analyze(io::Input& in, std::span<Analysis* const> analyses);

}  // namespace pdfix::transform
