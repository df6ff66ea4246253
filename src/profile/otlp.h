// A Profile as OpenTelemetry profiles (OTLP, opentelemetry-proto v1.11.0, profiles/v1development):
// an ExportProfilesServiceRequest, the body of an OTLP/HTTP `POST /v1development/profiles`. One
// Profile per pprof sample type (each event's samples, a clock's nanoseconds), sharing one
// dictionary whose tables each begin with their zero value, as the specification requires; the
// labels as the sample attributes thread.name, process.pid and thread.id; each mapping's proven
// build-id as process.executable.build_id.gnu, and the file id of its binary, where it is here,
// as process.executable.build_id.htlhash (profile/htlhash.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profile/locations.h"
#include "profile/stacks.h"

namespace pdfix::profile {

// `htlhashes`: each mapping's file id, "" for none (or empty: none at all).
absl::StatusOr<std::string> to_otlp(const Profile& profile, Locations& locations,
                                    const std::vector<std::string>& htlhashes);

}  // namespace pdfix::profile
