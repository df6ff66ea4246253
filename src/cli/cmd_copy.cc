#include <iostream>

#include "cli/progress.h"
#include "cli/verb.h"
#include "format/unfinished.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::cli {

Verb add_copy(CLI::App& app) {
  struct Args {
    std::string in;
    std::string out;
    OutputArgs output;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "copy",
      {"pdfix copy", "copy a perf.data through pdfix's reader and writer, changing nothing",
       "pdfix copy IN OUT",
       R"(Reads IN and writes OUT with no pass in between. The output is byte-identical to the input;
this is the check that pdfix's reader and writer lose nothing, and a cheap validation of IN
(an unreadable record is reported with its offset and no OUT is left behind).

IN and OUT may be '-' for stdin and stdout. A file-mode perf.data written to a pipe is
spooled to a temporary file first, because its header is completed last. A directory
recording (perf record --threads) is copied file for file; with --single-file it becomes one
perf.data holding all its records (compressed data then compressed anew).)",
       exit_status()});
  cmd->add_option("IN", a->in, "The recording to read ('-': stdin).")->required();
  cmd->add_option("OUT", a->out, "Where to write the copy ('-': stdout).")->required();
  add_output_options(*cmd, a->output);
  return {cmd, [a] {
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            Progress progress("copy");
            auto done = transform::run_pipeline(*in, a->out, {},
                                                {.progress = progress.callback(),
                                                 .single_file = a->output.single_file,
                                                 .zstd_level = a->output.zstd_level});
            if (!done.ok()) return fail(done.status());
            // Written as perf should have ended it: not as it was.
            if (auto cut = unfinished_cut(*in)) {
              std::cerr << "pdfix copy: " << a->in << ": " << format::unfinished_note(*cut) << "\n";
              return kExitIncomplete;
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
