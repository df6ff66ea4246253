#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_os_ostream.h"
#include "passes/inject_build_ids.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

constexpr const char* kHelp = R"(NAME
    pdfix inject --buildids - give every map record the build-id of what was mapped

SYNOPSIS
    pdfix inject --buildids [OPTIONS] IN OUT

DESCRIPTION
    Rewrites each MMAP and MMAP2 record of a file-backed mapping, the kernel's and its modules'
    included, as an MMAP2 that carries the build-id of the mapped file (misc bit MMAP_BUILD_ID,
    which perf reads since 5.12). Everything else in the record is kept: cpumode, the data bit,
    pid, tid, addresses, offset, file name and the sample_id trailer. Every injected id the
    build-id table lacks is added to it, so older readers see it too. Records that already carry
    an id, anonymous maps and files that cannot be identified for certain are left as they were.

    A build-id is taken, in this order of trust, from: --known-build-ids; the recording's own
    build-id table; the mapped file (under --sysroot if given, else on this machine, and then only
    if it is the same inode as the one mapped and was not modified after the recording ended);
    perf's build-id cache; for the kernel and its modules, the running kernel's notes, only when
    the recording is of this very boot (same release and the same KASLR _text address). A wrong
    build-id is worse than none: in doubt a map is left alone and the summary says why.

    Works on file- and pipe-mode input, either byte order, and zstd-compressed data (re-compressed
    on output). IN and OUT may be '-' for stdin and stdout.

OPTIONS
    --buildids                 The injection to perform (required).
    --known-build-ids LIST     PATH=ID pairs, comma-separated, or @FILE with one pair a line.
                               Use [kernel.kallsyms] for the kernel and [name] for a module.
    --sysroot DIR              A copy of the recording host's root; files are looked up there.
    --buildid-dir DIR          perf's build-id cache (default: ~/.debug when it exists).
    --json                     The summary as JSON on stderr.
    -v, --verbose              List every map in the summary, with where its id came from.

EXIT STATUS
    0 on success (maps left alone are not an error), 2 on bad usage or unreadable input.
)";

absl::Status parse_known(const std::string& value, resolve::ResolverConfig& config) {
  std::string text = value;
  if (!value.empty() && value[0] == '@') {
    std::ifstream f(value.substr(1));
    if (!f) return absl::NotFoundError("cannot read " + value.substr(1));
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
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

void print_summary(const passes::InjectReport& r, bool json, bool verbose) {
  if (json) {
    llvm::json::Object reasons;
    for (const auto& [why, n] : r.left_by_reason) reasons[why] = static_cast<int64_t>(n);
    llvm::json::Array maps;
    for (const auto& m : r.maps) {
      llvm::json::Object o{{"filename", m.filename},
                           {"outcome", m.outcome},
                           {"detail", m.detail},
                           {"records", static_cast<int64_t>(m.records)}};
      if (!m.build_id.empty()) o["build_id"] = m.build_id;
      maps.push_back(std::move(o));
    }
    llvm::json::Object root{{"upgraded", static_cast<int64_t>(r.upgraded)},
                            {"had_build_id", static_cast<int64_t>(r.already)},
                            {"left_alone", static_cast<int64_t>(r.left)},
                            {"left_alone_by_reason", std::move(reasons)},
                            {"table_entries_added", static_cast<int64_t>(r.table_entries_added)},
                            {"maps", std::move(maps)}};
    llvm::raw_os_ostream err(std::cerr);
    err << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    return;
  }
  std::cerr << "pdfix inject: " << r.upgraded << " map records upgraded, " << r.already
            << " already had a build-id, " << r.left << " left alone; " << r.table_entries_added
            << " build-id table entries added\n";
  for (const auto& [why, n] : r.left_by_reason) {
    std::cerr << "  left alone, " << why << ": " << n << "\n";
  }
  for (const auto& m : r.maps) {
    if (!verbose && m.outcome != "left alone") continue;
    std::cerr << "  " << m.outcome << ": " << m.filename;
    if (!m.build_id.empty()) std::cerr << " " << m.build_id;
    std::cerr << " (" << m.detail << ", " << m.records << " record" << (m.records == 1 ? "" : "s")
              << ")\n";
  }
}

}  // namespace

int cmd_inject(const Args& args) {
  bool help = false, buildids = false, json = false, verbose = false;
  passes::InjectBuildIdsConfig config;
  if (const char* home = std::getenv("HOME")) {
    struct stat st{};
    std::string dir = std::string(home) + "/.debug";
    if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) config.resolver.buildid_dir = dir;
  }
  auto flag = [](bool& b) {
    return [&b](const std::string&) {
      b = true;
      return absl::OkStatus();
    };
  };
  auto pos =
      parse_args(args, {{"--help", "-h", false, flag(help)},
                        {"--buildids", "", false, flag(buildids)},
                        {"--json", "", false, flag(json)},
                        {"--verbose", "-v", false, flag(verbose)},
                        {"--known-build-ids", "", true,
                         [&](const std::string& v) { return parse_known(v, config.resolver); }},
                        {"--sysroot", "", true,
                         [&](const std::string& v) {
                           config.resolver.sysroot = std::string(absl::StripSuffix(v, "/"));
                           return absl::OkStatus();
                         }},
                        {"--buildid-dir", "", true, [&](const std::string& v) {
                           config.resolver.buildid_dir = v;
                           return absl::OkStatus();
                         }}});
  if (!pos.ok()) return usage_error(std::string(pos.status().message()), "inject");
  if (help) {
    std::cout << kHelp;
    return kExitOk;
  }
  if (!buildids) return usage_error("say what to inject: --buildids", "inject");
  if (pos->size() != 2) return usage_error("inject takes IN and OUT", "inject");
  auto in = io::open_input((*pos)[0]);
  if (!in.ok()) return fail(in.status());
  if (in->mapped != nullptr) {
    // The recording ended when its file was last written: a file changed after that is not the
    // one that was mapped.
    struct stat st{};
    if (fstat(in->mapped->fd(), &st) == 0) config.recording_ended_at = st.st_mtim.tv_sec;
  }
  passes::InjectBuildIds pass(std::move(config));
  transform::Pass* passes[] = {&pass};
  Progress progress("inject");
  transform::PipelineOptions options{.progress = progress.callback()};
  if (auto s = transform::run_pipeline(*in, (*pos)[1], passes, options); !s.ok()) return fail(s);
  print_summary(pass.report(), json, verbose);
  return kExitOk;
}

}  // namespace pdfix::cli
