// The pdfix verbs. Each verb file adds its subcommand to the command line and says what runs when
// it is chosen; main.cc lists them, one line each.
#pragma once

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "io/exit_status.h"
#include "io/input.h"
#include "resolve/host.h"

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
class Value;
}  // namespace llvm::json

namespace pdfix::cli {

// A verb's EXIT STATUS section: each status with its meaning and, from `when`, the cases in which
// this verb returns it (1 and 3 appear only with cases; 2 has its own and may get more).
std::string exit_status(const std::vector<std::pair<int, std::string>>& when = {});

// What a verb's --help shows besides its options.
struct Page {
  std::string name;         // "pdfix copy"
  std::string summary;      // one line
  std::string synopsis;     // "pdfix copy IN OUT"
  std::string description;  // paragraphs, unindented
  std::string exit_status;
};

struct Verb {
  CLI::App* command = nullptr;
  std::function<int()> run;  // after the command line parsed
};

// Adds a subcommand whose --help is `page` as a man page.
CLI::App* add_command(CLI::App& app, const std::string& verb, Page page);

// -q, for a verb that says what it did on stderr: no summary and no progress bar; errors are
// still printed, and the exit status tells the rest.
void add_quiet_flag(CLI::App& cmd, bool& quiet);

// Where a verb says what it did: stderr, or nowhere with -q.
class Summary {
 public:
  explicit Summary(bool quiet) : quiet_(quiet) {}
  std::ostream& out() { return quiet_ ? discard_ : std::cerr; }
  bool quiet() const { return quiet_; }

 private:
  bool quiet_;
  std::ostream discard_{nullptr};  // no buffer: what is written goes nowhere
};

// Where a --json report goes: stdout, unless stdout carries the data written (OUT or BUNDLE '-').
std::ostream& json_stream(const std::string& data_out);

Verb add_copy(CLI::App& app);
Verb add_info(CLI::App& app);
Verb add_dump(CLI::App& app);
Verb add_buildid_list(CLI::App& app);
Verb add_check(CLI::App& app, const resolve::Host& host);
Verb add_archive(CLI::App& app, const resolve::Host& host);
Verb add_unpack(CLI::App& app);
Verb add_store(CLI::App& app, const resolve::Host& host);
Verb add_fetch(CLI::App& app, const resolve::Host& host);
Verb add_export(CLI::App& app, const resolve::Host& host);
Verb add_follow(CLI::App& app, const resolve::Host& host);
// One verb per repair pass, and `fix`, which runs them all; only the one named `only`, when it is
// one of them.
std::vector<Verb> add_repairs(CLI::App& app, const resolve::Host& host,
                              const std::string& only = "");

// How a verb that writes a recording writes it: --single-file, --zstd-level.
struct OutputArgs {
  bool single_file = false;
  int zstd_level = 0;
};
void add_output_options(CLI::App& cmd, OutputArgs& out);

// Prints "pdfix: <message>" and returns the error exit status.
int fail(const absl::Status& status);
// The same, and the reason as `error` in `json` when there is one: a script reading a line a
// recording (follow, fix IN... OUTDIR) learns why one was not done.
int fail(const absl::Status& status, llvm::json::Object* json);

// The bytes lost at the end of IN when perf record never ended it (format/unfinished.h: the verbs
// that write read it salvaged); nullopt for a file perf ended, or a stream.
std::optional<uint64_t> unfinished_cut(const io::Input& in);
// Pretty-printed, with a final newline.
void print_json(llvm::json::Value root, std::ostream& out);

}  // namespace pdfix::cli
