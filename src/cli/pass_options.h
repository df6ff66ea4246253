// The options of each pass, shared by the pass's own verb and by `pdfix fix`, which runs them all.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/args.h"
#include "io/input.h"
#include "passes/fix_module_sizes.h"
#include "passes/inject_build_ids.h"
#include "transform/pass.h"

namespace pdfix::cli {

// A switch: sets `target` when given.
Option switch_option(std::string name, std::string short_name, bool& target);

// Options every repair verb takes: --sysroot (read by more than one pass), --json, --verbose.
struct CommonOptions {
  std::string sysroot;
  bool json = false;
  bool verbose = false;
  bool help = false;
};
void add_common_options(std::vector<Option>& options, CommonOptions& common);

// --known-build-ids and --buildid-dir. The build-id cache defaults to ~/.debug when it exists.
void add_inject_options(std::vector<Option>& options, passes::InjectBuildIdsConfig& config);
// Completes the config with what the input and the common options tell.
void finish_inject_config(passes::InjectBuildIdsConfig& config, const CommonOptions& common,
                          const io::Input& in);

// --proc-modules FILE (read and checked when parsed) and --modules-dir DIR.
void add_module_size_options(std::vector<Option>& options, passes::FixModuleSizesConfig& config);
void finish_module_size_config(passes::FixModuleSizesConfig& config, const CommonOptions& common);

// A repair verb's command line after parsing: IN opened, OUT named. When `exit` is set the verb is
// done already (its help printed, or a usage or input error reported) and returns that status.
struct RepairArgs {
  std::optional<io::Input> in;
  std::string out;
  std::optional<int> exit;
};
RepairArgs parse_repair_args(const std::vector<std::string>& args,
                             const std::vector<Option>& options, const CommonOptions& common,
                             const char* verb, const char* help);

// Runs `passes` over `in` into `out_path` with a progress bar labelled `verb`. Returns 0, or the
// error exit status after printing the error.
int run_passes(const char* verb, io::Input& in, const std::string& out_path,
               std::span<transform::Pass* const> passes);

}  // namespace pdfix::cli
