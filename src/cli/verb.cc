#include "cli/verb.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/man_page.h"
#include "format/file_header.h"
#include "format/unfinished.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_os_ostream.h"

namespace pdfix::cli {

CLI::App* add_command(CLI::App& app, const std::string& verb, Page page) {
  CLI::App* cmd = app.add_subcommand(verb, page.summary);
  cmd->formatter(std::make_shared<ManPage>(std::move(page)));
  return cmd;
}

std::string exit_status(const std::vector<std::pair<int, std::string>>& when) {
  std::string out = "0  done.\n";
  // 2 is always there; 1 and 3 only for a verb that says when.
  auto add = [&](int status, const std::string& meaning) {
    std::string cases;
    for (const auto& [s, c] : when) {
      if (s == status) cases = c;
    }
    if (!cases.empty() || status == kExitError) {
      out += filled(absl::StrCat(status), cases.empty() ? meaning : meaning + " " + cases, 3, 96);
    }
  };
  add(kExitFixable, "fix would repair something:");
  add(kExitError,
      "not done: bad usage, unreadable input, an OUT that is IN, a write that failed; no output "
      "is left behind.");
  add(kExitIncomplete, "done, but not all there:");
  return out;
}

void add_quiet_flag(CLI::App& cmd, bool& quiet) {
  cmd.add_flag("-q,--quiet", quiet,
               "Print no summary and no progress bar; errors are still printed, and the exit "
               "status says the rest.");
}

std::ostream& json_stream(const std::string& data_out) {
  return data_out == "-" ? std::cerr : std::cout;
}

int fail(const absl::Status& status) {
  std::cerr << "pdfix: " << status.message() << "\n";
  return kExitError;
}

int fail(const absl::Status& status, llvm::json::Object* json) {
  if (json != nullptr) (*json)["error"] = std::string(status.message());
  return fail(status);
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
                 "The zstd level of compressed data written anew, 1 to 19 (default 1, perf's own "
                 "default; the input's level is not taken).")
      ->check(CLI::Range(1, 19))
      ->type_name("N");
}

}  // namespace pdfix::cli

namespace pdfix::cli {

std::optional<uint64_t> unfinished_cut(const io::Input& in) {
  if (in.mapped == nullptr) return std::nullopt;
  const std::span<const uint8_t> file = in.mapped->bytes();
  auto h = format::parse_file_header(file);
  if (!h.ok() || !format::unfinished(file, *h)) return std::nullopt;
  return format::salvaged(file, *h).cut;
}

}  // namespace pdfix::cli
