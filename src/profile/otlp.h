// A Profile as OpenTelemetry profiles (OTLP, opentelemetry-proto v1.11.0, profiles/v1development):
// an ExportProfilesServiceRequest, the body of an OTLP/HTTP `POST /v1development/profiles`. One
// Profile per pprof sample type (each event's samples, a clock's nanoseconds), sharing one
// dictionary whose tables each begin with their zero value, as the specification requires; the
// thread's command as the sample attribute thread.name; each mapping's proven build-id as
// process.executable.build_id.gnu.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "profile/locations.h"
#include "profile/stacks.h"

namespace pdfix::profile {

absl::StatusOr<std::string> to_otlp(const Profile& profile, Locations& locations);

}  // namespace pdfix::profile
