#include "cli/pass_options.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

absl::StatusOr<std::string> read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return absl::NotFoundError("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

absl::Status parse_known(const std::string& value, resolve::ResolverConfig& config) {
  std::string text = value;
  if (!value.empty() && value[0] == '@') {
    auto contents = read_text(value.substr(1));
    if (!contents.ok()) return contents.status();
    text = std::move(*contents);
  }
  for (absl::string_view pair : absl::StrSplit(text, absl::ByAnyChar(",\n"), absl::SkipEmpty())) {
    pair = absl::StripAsciiWhitespace(pair);
    if (pair.empty()) continue;
    auto eq = pair.rfind('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError("--known-build-ids wants PATH=ID, got '" +
                                        std::string(pair) + "'");
    }
    auto id =
        resolve::BuildId::from_hex(std::string_view(pair.data() + eq + 1, pair.size() - eq - 1));
    if (!id) {
      return absl::InvalidArgumentError("not a build-id (hex, up to 40 digits): '" +
                                        std::string(pair.substr(eq + 1)) + "'");
    }
    config.known[std::string(pair.substr(0, eq))] = *id;
  }
  return absl::OkStatus();
}

Option value_option(std::string name, std::string& target) {
  return {std::move(name), "", true, [&target](const std::string& v) {
            target = v;
            return absl::OkStatus();
          }};
}

}  // namespace

Option switch_option(std::string name, std::string short_name, bool& target) {
  return {std::move(name), std::move(short_name), false, [&target](const std::string&) {
            target = true;
            return absl::OkStatus();
          }};
}

void add_common_options(std::vector<Option>& options, CommonOptions& common) {
  options.push_back(switch_option("--help", "-h", common.help));
  options.push_back(switch_option("--json", "", common.json));
  options.push_back(switch_option("--verbose", "-v", common.verbose));
  options.push_back({"--sysroot", "", true, [&common](const std::string& v) {
                       common.sysroot = std::string(absl::StripSuffix(v, "/"));
                       return absl::OkStatus();
                     }});
}

void add_inject_options(std::vector<Option>& options, passes::InjectBuildIdsConfig& config) {
  if (const char* home = std::getenv("HOME")) {
    struct stat st{};
    std::string dir = std::string(home) + "/.debug";
    if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) config.resolver.buildid_dir = dir;
  }
  options.push_back({"--known-build-ids", "", true,
                     [&config](const std::string& v) { return parse_known(v, config.resolver); }});
  options.push_back(value_option("--buildid-dir", config.resolver.buildid_dir));
}

void finish_inject_config(passes::InjectBuildIdsConfig& config, const CommonOptions& common,
                          const io::Input& in) {
  config.resolver.sysroot = common.sysroot;
  if (in.mapped != nullptr) {
    // The recording ended when its file was last written: a file changed after that is not the
    // one that was mapped.
    struct stat st{};
    if (fstat(in.mapped->fd(), &st) == 0) config.recording_ended_at = st.st_mtim.tv_sec;
  }
}

void add_module_size_options(std::vector<Option>& options, passes::FixModuleSizesConfig& config) {
  options.push_back({"--proc-modules", "", true, [&config](const std::string& v) -> absl::Status {
                       auto text = read_text(v);
                       if (!text.ok()) return text.status();
                       auto listing = resolve::parse_proc_modules(*text);
                       if (!listing.ok()) {
                         return absl::InvalidArgumentError(v + ": " +
                                                           std::string(listing.status().message()));
                       }
                       config.proc_modules = std::move(*listing);
                       return absl::OkStatus();
                     }});
  options.push_back(value_option("--modules-dir", config.modules_dir));
}

void finish_module_size_config(passes::FixModuleSizesConfig& config, const CommonOptions& common) {
  config.sysroot = common.sysroot;
}

RepairArgs parse_repair_args(const std::vector<std::string>& args,
                             const std::vector<Option>& options, const CommonOptions& common,
                             const char* verb, const char* help) {
  RepairArgs out;
  auto pos = parse_args(args, options);
  if (!pos.ok()) {
    out.exit = usage_error(std::string(pos.status().message()), verb);
  } else if (common.help) {
    std::cout << help;
    out.exit = kExitOk;
  } else if (pos->size() != 2) {
    out.exit = usage_error(absl::StrCat(verb, " takes IN and OUT"), verb);
  } else if (auto in = io::open_input((*pos)[0]); !in.ok()) {
    out.exit = fail(in.status());
  } else {
    out.in = std::move(*in);
    out.out = (*pos)[1];
  }
  return out;
}

int run_passes(const char* verb, io::Input& in, const std::string& out_path,
               std::span<transform::Pass* const> passes) {
  Progress progress(verb);
  transform::PipelineOptions options{.progress = progress.callback()};
  if (auto s = transform::run_pipeline(in, out_path, passes, options); !s.ok()) return fail(s);
  return kExitOk;
}

}  // namespace pdfix::cli
