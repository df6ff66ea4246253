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

void add_single_file(CLI::App& cmd, bool& single_file) {
  cmd.add_flag("--single-file", single_file,
               "IN is a directory recording (perf record --threads): write OUT as one perf.data "
               "holding all its records, not as a directory.");
}

}  // namespace pdfix::cli
