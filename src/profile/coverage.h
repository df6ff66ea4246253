// How much of a profile has names, by binary: of the samples whose leaf frame lies in a mapping
// of each (its file and build-id: one binary maps in many processes), how many are named. What
// export's summary tells, with why a binary's are not.
#pragma once

#include <cstdint>
#include <vector>

#include "profile/locations.h"
#include "profile/stacks.h"

namespace pdfix::profile {

struct MappingCoverage {
  // One of the binary's mappings: an index into Profile::mappings plus one; 0: no map covered
  // the leaf.
  uint64_t mapping = 0;
  uint64_t samples = 0;
  uint64_t named = 0;
  uint64_t first_stack = 0;  // the first stack with a leaf in it (Profile::stacks)
};

// Every binary that holds a leaf, most samples first.
std::vector<MappingCoverage> leaf_coverage(const Profile& profile, Locations& locations);

}  // namespace pdfix::profile
