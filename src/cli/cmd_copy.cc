#include "cli/progress.h"
#include "cli/verb.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::cli {

Verb add_copy(CLI::App& app) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* cmd = add_command(
      app, "copy",
      {"pdfix copy", "copy a perf.data through pdfix's reader and writer, changing nothing",
       "pdfix copy IN OUT",
       R"(Reads IN and writes OUT with no pass in between. The output is byte-identical to the input;
this is the check that pdfix's reader and writer lose nothing, and a cheap validation of IN
(an unreadable record is reported with its offset and no OUT is left behind).

IN and OUT may be '-' for stdin and stdout. A file-mode perf.data written to a pipe is
spooled to a temporary file first, because its header is completed last.)",
       "0 on success, 2 on bad usage or unreadable input."});
  cmd->add_option("IN", paths->first, "The recording to read ('-': stdin).")->required();
  cmd->add_option("OUT", paths->second, "Where to write the copy ('-': stdout).")->required();
  return {cmd, [paths] {
            auto in = io::open_input(paths->first);
            if (!in.ok()) return fail(in.status());
            Progress progress("copy");
            auto done =
                transform::run_pipeline(*in, paths->second, {}, {.progress = progress.callback()});
            return done.ok() ? kExitOk : fail(done.status());
          }};
}

}  // namespace pdfix::cli
