#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix copy - copy a perf.data through pdfix's reader and writer, changing nothing

SYNOPSIS
    pdfix copy IN OUT

DESCRIPTION
    Reads IN and writes OUT with no pass in between. The output is byte-identical to the input;
    this is the check that pdfix's reader and writer lose nothing, and a cheap validation of IN
    (an unreadable record is reported with its offset and no OUT is left behind).

    IN and OUT may be '-' for stdin and stdout. A file-mode perf.data written to a pipe is
    spooled to a temporary file first, because its header is completed last.

EXIT STATUS
    0 on success, 2 on bad usage or unreadable input.
)";

}  // namespace

int cmd_copy(const Args& args) {
  bool help = false;
  auto pos = parse_args(args, {{"--help", "-h", false, [&](const std::string&) {
                                  help = true;
                                  return absl::OkStatus();
                                }}});
  if (!pos.ok()) return usage_error(std::string(pos.status().message()), "copy");
  if (help) {
    std::cout << kHelp;
    return kExitOk;
  }
  if (pos->size() != 2) return usage_error("copy takes IN and OUT", "copy");
  auto in = io::open_input((*pos)[0]);
  if (!in.ok()) return fail(in.status());
  Progress progress("copy");
  transform::PipelineOptions options{.progress = progress.callback()};
  if (auto s = transform::run_pipeline(*in, (*pos)[1], {}, options); !s.ok()) return fail(s);
  return kExitOk;
}

}  // namespace pdfix::cli
