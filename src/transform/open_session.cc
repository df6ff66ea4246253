#include "transform/open_session.h"

#include "absl/strings/str_cat.h"
#include "format/feature.h"
#include "format/file_header.h"

namespace pdfix::transform {

absl::StatusOr<Session> open_session(io::Input& in) {
  if (in.mapped != nullptr) {
    auto file = in.mapped->bytes();
    auto header = format::parse_file_header(file);
    if (!header.ok()) return header.status();
    if (header->pipe) return Session::from_pipe(*header);
    auto session = Session::from_file(file, *header);
    if (!session.ok() || in.directory) return session;
    // perf record --threads: this file holds what perf synthesized; the samples are in the
    // data.N files beside it. Read alone, the recording would lose them.
    if (auto dir = session->feature(format::kFeatDirFormat);
        dir && format::dir_format_version(*dir).value_or(0) >= 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(in.name,
                       " is the `data` file of a perf directory recording (HEADER_DIR_FORMAT): its "
                       "samples are in the data.N files beside it; give the directory instead"));
    }
    return session;
  }
  auto head = in.pipe->peek(format::kFileHeaderSize);
  if (!head.ok()) return head.status();
  auto header = format::parse_file_header(*head, /*whole_file=*/false);
  if (!header.ok()) return header.status();
  if (!header->pipe) {
    return absl::InvalidArgumentError(absl::StrCat(
        in.name,
        " is a file-mode perf.data arriving through a pipe, which cannot be read in order; "
        "give its path instead (or record with -o - for pipe mode)"));
  }
  in.pipe->consume(format::kPipeHeaderSize);
  return Session::from_pipe(*header);
}

std::unique_ptr<RecordReader> make_reader(io::Input& in, Session& session, ReaderOptions opts) {
  if (in.mapped != nullptr) {
    return std::make_unique<RecordReader>(*in.mapped, session, opts, in.part_views());
  }
  return std::make_unique<RecordReader>(*in.pipe, session, opts);
}

}  // namespace pdfix::transform
