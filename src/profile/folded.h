// Folded stacks: one line per distinct stack, `comm;root;...;leaf count`, as flamegraph.pl,
// inferno and speedscope read them. Inline frames are frames of their own, outermost first.
#pragma once

#include <string>

#include "profile/locations.h"
#include "profile/stacks.h"

namespace pdfix::profile {

// The stacks of event number `event` (Profile::events), counted in samples.
std::string to_folded(const Profile& profile, Locations& locations, uint64_t event);

}  // namespace pdfix::profile
