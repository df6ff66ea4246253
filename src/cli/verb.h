// The pdfix verbs. Each verb file adds its subcommand to the command line and says what runs when
// it is chosen; main.cc lists them, one line each.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "llvm/Support/JSON.h"
#include "resolve/host.h"

namespace pdfix::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // `check` found an error
inline constexpr int kExitError = 2;

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

Verb add_copy(CLI::App& app);
Verb add_info(CLI::App& app);
Verb add_dump(CLI::App& app);
Verb add_buildid_list(CLI::App& app);
Verb add_check(CLI::App& app, const resolve::Host& host);
Verb add_archive(CLI::App& app, const resolve::Host& host);
Verb add_unpack(CLI::App& app);
Verb add_store(CLI::App& app, const resolve::Host& host);
Verb add_fetch(CLI::App& app, const resolve::Host& host);
// One verb per repair pass, and `fix`, which runs them all.
std::vector<Verb> add_repairs(CLI::App& app, const resolve::Host& host);

// How a verb that writes a recording writes it: --single-file, --zstd-level.
struct OutputArgs {
  bool single_file = false;
  int zstd_level = 0;
};
void add_output_options(CLI::App& cmd, OutputArgs& out);

// Prints "pdfix: <message>" and returns the error exit status.
int fail(const absl::Status& status);
// Pretty-printed, with a final newline.
void print_json(llvm::json::Value root, std::ostream& out);

}  // namespace pdfix::cli
