// A Profile as pprof's profile.proto (third_party/pprof), gzip-compressed as pprof writes it: one
// sample type per event counted in samples, the clock events also in nanoseconds of their period;
// the command of each stack's thread as the label "comm"; every mapping with the build-id its
// record carried, the program's first (the program, not a shared object, in the most samples'
// stacks), as pprof takes the first for the program profiled.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "profile/locations.h"
#include "profile/stacks.h"

namespace pdfix::profile {

absl::StatusOr<std::string> to_pprof(const Profile& profile, Locations& locations);

}  // namespace pdfix::profile
