// What a pass must know of the whole recording before the records that tell it, found by one
// sweep of its own. Records come per CPU, so what perf applies before a record (by time) may come
// after it in the file; and whether perf's one build-id for a path can be a map's depends on how
// many files the whole recording maps there. A stream is read once: it has no analysis, and the
// passes make do with what they have met.
//
// The sweep runs when a pass first needs its answer, not before every run: few recordings need
// one, and a sweep reads the whole file again (fix of a 56 MiB --call-graph dwarf recording took
// 30% longer when it always ran).
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

// Sweeps one analysis over one run's input the first time it is asked for, and never again.
class SweptOnce {
 public:
  explicit SweptOnce(io::Input& in) : in_(in) {}
  // Whether `a` holds the whole recording: swept now if it was not yet; false for a stream.
  bool sweep(Analysis& a);

 private:
  io::Input& in_;
  bool swept_ = false;
};

// One analysis of one run's input, swept the first time it is asked for.
template <typename A>
class OnDemand {
 public:
  explicit OnDemand(io::Input& in) : once_(in) {}
  // The analysis of the whole recording; nullptr for a stream.
  const A* get() { return once_.sweep(analysis_) ? &analysis_ : nullptr; }

 private:
  SweptOnce once_;
  A analysis_;
};

}  // namespace pdfix::transform
