// `pdfix dump`: one line per record (offset, type, misc, size, decoded fields), like
// `perf report -D` but readable; with --json, one JSON object per line.
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "io/input.h"

namespace pdfix::inspect {

absl::Status dump_records(io::Input& in, bool json, std::ostream& os);

}  // namespace pdfix::inspect
