// The read-only verbs: info and dump.
#include <iostream>
#include <optional>

#include "cli/args.h"
#include "cli/commands.h"
#include "inspect/dump.h"
#include "inspect/info.h"
#include "io/input.h"

namespace pdfix::cli {
namespace {

constexpr const char* kInfoHelp = R"(NAME
    pdfix info - summarize a perf.data

SYNOPSIS
    pdfix info [--json] IN

DESCRIPTION
    Prints the file's mode (file or pipe) and byte order, its events, its feature sections with
    their sizes (decoded where pdfix reads them: hostname, osrelease, arch, nrcpus, cmdline,
    build_id, compressed, auxtrace, clock_data), and the number of records of each type by perf's
    names. Records inside zstd-compressed data are counted as perf counts them, after
    decompression, so the counts compare with `perf report --stats`.

    IN may be '-' for stdin (pipe-mode data, or a file redirected in).

OPTIONS
    --json    One JSON object instead of text; record counts are under "record_counts".

EXIT STATUS
    0 on success, 2 on bad usage or unreadable input.
)";

constexpr const char* kDumpHelp = R"(NAME
    pdfix dump - list every record of a perf.data

SYNOPSIS
    pdfix dump [--json] IN

DESCRIPTION
    One line per record: file offset, type, misc, size, and the decoded fields of the types
    pdfix understands (MMAP/MMAP2 with their build-id when they carry one, COMM, FORK/EXIT, the
    leading fields of SAMPLE). Records inside compressed data show the offset of the compressed
    record and their offset in the decompressed stream as "[zstd +0x...]".

OPTIONS
    --json    One JSON object per line (JSON Lines), for scripts.

EXIT STATUS
    0 on success, 2 on bad usage or unreadable input (after printing the records before it).
)";

struct ReadOnlyArgs {
  bool json = false;
  bool help = false;
  std::string input;
};

// Returns an exit status when the verb is done already (help, usage error).
std::optional<int> parse_read_only(const Args& args, const char* verb, const char* help_text,
                                   ReadOnlyArgs& out) {
  auto flag = [](bool& b) {
    return [&b](const std::string&) {
      b = true;
      return absl::OkStatus();
    };
  };
  auto pos = parse_args(
      args, {{"--json", "", false, flag(out.json)}, {"--help", "-h", false, flag(out.help)}});
  if (!pos.ok()) return usage_error(std::string(pos.status().message()), verb);
  if (out.help) {
    std::cout << help_text;
    return kExitOk;
  }
  if (pos->size() != 1) return usage_error(std::string(verb) + " takes one input", verb);
  out.input = (*pos)[0];
  return std::nullopt;
}

}  // namespace

int cmd_info(const Args& args) {
  ReadOnlyArgs a;
  if (auto done = parse_read_only(args, "info", kInfoHelp, a)) return *done;
  auto in = io::open_input(a.input);
  if (!in.ok()) return fail(in.status());
  auto info = inspect::collect_info(*in);
  if (!info.ok()) return fail(info.status());
  if (a.json) {
    inspect::print_info_json(*info, std::cout);
  } else {
    inspect::print_info_text(*info, std::cout);
  }
  return kExitOk;
}

int cmd_dump(const Args& args) {
  ReadOnlyArgs a;
  if (auto done = parse_read_only(args, "dump", kDumpHelp, a)) return *done;
  auto in = io::open_input(a.input);
  if (!in.ok()) return fail(in.status());
  std::ios::sync_with_stdio(false);
  if (auto s = inspect::dump_records(*in, a.json, std::cout); !s.ok()) {
    std::cout.flush();
    return fail(s);
  }
  return kExitOk;
}

}  // namespace pdfix::cli
