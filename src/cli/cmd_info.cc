#include <iostream>

#include "cli/verb.h"
#include "inspect/info.h"
#include "io/input.h"

namespace pdfix::cli {

Verb add_info(CLI::App& app) {
  struct Args {
    std::string in;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "info",
      {"pdfix info", "summarize a perf.data", "pdfix info [--json] IN",
       R"(Prints the file's mode (file or pipe) and byte order, its events, its feature sections with
their sizes (decoded where pdfix reads them: hostname, osrelease, arch, nrcpus, cmdline,
build_id, compressed, auxtrace, clock_data), and the number of records of each type by perf's
names. Records inside zstd-compressed data are counted as perf counts them, after
decompression, so the counts compare with `perf report --stats`.

IN may be '-' for stdin (pipe-mode data, or a file redirected in).)",
       exit_status()});
  cmd->add_option("IN", a->in, "The recording to read ('-': stdin).")->required();
  cmd->add_flag("--json", a->json,
                "One JSON object instead of text; record counts are under \"record_counts\".");
  return {cmd, [a] {
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            auto info = inspect::collect_info(*in);
            if (!info.ok()) return fail(info.status());
            if (a->json) {
              inspect::print_info_json(*info, std::cout);
            } else {
              inspect::print_info_text(*info, std::cout);
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
