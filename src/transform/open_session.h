// From an input to a Session and a reader over its records, for file and pipe inputs alike.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "transform/reader.h"
#include "transform/session.h"

namespace pdfix::transform {

// Reads the header (and, in file mode, attrs and the feature table). On a pipe this consumes the
// 16-byte pipe header, so it is called once per pipe; a mapped input may be opened again.
absl::StatusOr<Session> open_session(io::Input& in);

std::unique_ptr<RecordReader> make_reader(io::Input& in, Session& session, ReaderOptions opts);

}  // namespace pdfix::transform
