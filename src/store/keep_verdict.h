// What a keeping run leaves unresolved, and whether its job was done: the judgement `archive`,
// `store` and `fix --archive/--store` report and exit by. A summary that says "every binary
// resolves" must mean that a report of the kept recording names them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "store/binaries.h"

namespace pdfix::store {

// Whether `b` will resolve from what was kept: a proven copy was found.
bool resolves(const Binary& b);

// `part` of `all`, in percent; 0 for none.
double share(uint64_t part, uint64_t all);

struct Verdict {
  size_t missing = 0;  // binaries named by build-id with no proven copy, hit or not
  // Binaries that samples hit and that will not resolve, most samples first: those named by
  // build-id without a copy, and files no record names by build-id that are not kept by path.
  std::vector<const Binary*> unresolved;
  uint64_t unresolved_samples = 0;
  // Samples hit files and the recording names not one of them by build-id: nothing can be
  // resolved (run pdfix fix first).
  bool no_ids = false;
  // The job is not done: no ids at all, or, with `strict`, a binary that samples hit unresolved.
  bool incomplete(bool strict) const { return no_ids || (strict && !unresolved.empty()); }
};

// `named` outlives the verdict, which points into it.
Verdict judge(const Named& named);

}  // namespace pdfix::store
