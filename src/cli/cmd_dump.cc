#include <iostream>

#include "cli/verb.h"
#include "inspect/dump.h"
#include "io/input.h"

namespace pdfix::cli {

Verb add_dump(CLI::App& app) {
  struct Args {
    std::string in;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "dump",
      {"pdfix dump", "list every record of a perf.data", "pdfix dump [--json] IN",
       R"(One line per record: file offset, type, misc, size, and the decoded fields of the types
pdfix understands (MMAP/MMAP2 with their build-id when they carry one, COMM, FORK/EXIT, the
leading fields of SAMPLE). Records inside compressed data show the offset of the compressed
record and their offset in the decompressed stream as "[zstd +0x...]".)",
       exit_status({{kExitError, "Unreadable input is reported after the records before it."}})});
  cmd->add_option("IN", a->in, "The recording to read ('-': stdin).")->required();
  cmd->add_flag("--json", a->json, "One JSON object per line (JSON Lines), for scripts.");
  return {cmd, [a] {
            auto in = io::open_input(a->in);
            if (!in.ok()) return fail(in.status());
            std::ios::sync_with_stdio(false);
            if (auto s = inspect::dump_records(*in, a->json, std::cout); !s.ok()) {
              std::cout.flush();
              return fail(s);
            }
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
