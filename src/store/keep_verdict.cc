#include "store/keep_verdict.h"

#include <algorithm>
#include <tuple>

namespace pdfix::store {

bool resolves(const Binary& b) { return b.from != Binary::From::kNothing; }

double share(uint64_t part, uint64_t all) {
  return all == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(all);
}

Verdict judge(const Named& named) {
  Verdict v;
  v.missing = std::count_if(named.binaries.begin(), named.binaries.end(),
                            [](const Binary& b) { return !resolves(b); });
  for (const Binary& b : named.binaries) {
    if (!resolves(b) && b.samples > 0) v.unresolved.push_back(&b);
  }
  for (const Binary& b : named.idless) {
    if (!resolves(b)) v.unresolved.push_back(&b);
  }
  std::sort(v.unresolved.begin(), v.unresolved.end(), [](const Binary* a, const Binary* b) {
    return std::tie(b->samples, a->name) < std::tie(a->samples, b->name);
  });
  for (const Binary* b : v.unresolved) v.unresolved_samples += b->samples;
  v.no_ids = named.binaries.empty() && !v.unresolved.empty();
  return v;
}

}  // namespace pdfix::store
