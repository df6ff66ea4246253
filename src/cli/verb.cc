#include "cli/verb.h"

#include <iostream>

#include "cli/man_page.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_os_ostream.h"

namespace pdfix::cli {

CLI::App* add_command(CLI::App& app, const std::string& verb, Page page) {
  CLI::App* cmd = app.add_subcommand(verb, page.summary);
  cmd->formatter(std::make_shared<ManPage>(std::move(page)));
  return cmd;
}

int fail(const absl::Status& status) {
  std::cerr << "pdfix: " << status.message() << "\n";
  return kExitError;
}

void print_json(llvm::json::Value root, std::ostream& out) {
  llvm::raw_os_ostream os(out);
  os << llvm::formatv("{0:2}", root) << "\n";
}

void add_output_options(CLI::App& cmd, OutputArgs& out) {
  cmd.add_flag("--single-file", out.single_file,
               "IN is a directory recording (perf record --threads): write OUT as one perf.data "
               "holding all its records, not as a directory.");
  cmd.add_option("--zstd-level", out.zstd_level,
                 "The zstd level of compressed data written anew (default 1, perf's own default; "
                 "the input's level is not taken).")
      ->check(CLI::Range(1, 19))
      ->type_name("N");
}

}  // namespace pdfix::cli
