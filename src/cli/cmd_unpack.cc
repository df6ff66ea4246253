#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/keep.h"
#include "cli/verb.h"
#include "llvm/Support/JSON.h"
#include "store/bundle.h"

namespace pdfix::cli {
namespace {

// A path as a shell reads it back.
std::string shell_word(const std::string& s) {
  if (s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=") ==
      std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string pid_list(const std::vector<uint32_t>& pids) {
  std::string out;
  for (uint32_t pid : pids) absl::StrAppend(&out, out.empty() ? "" : ",", pid);
  return out;
}

// The commands that name everything: perf report with the cache, and for files without a
// build-id with --symfs (one root a report, for the processes of its files when there are
// several) and the kernel's kallsyms by name, which perf stops looking up once --symfs is given;
// hotspot's perfparser with the same root as its sysroot.
void print_commands(const store::Unpacked& u, std::ostream& os) {
  const std::string report = absl::StrCat("perf --buildid-dir ", shell_word(u.cache), " report -i ",
                                          shell_word(u.recording));
  if (u.symfs.empty()) {
    os << report << "\n"
       << "hotspot-perfparser --input " << shell_word(u.recording) << " --debug "
       << shell_word(u.cache) << "\n";
    return;
  }
  const std::string kallsyms = u.kallsyms.empty() ? "" : " --kallsyms " + shell_word(u.kallsyms);
  for (const store::SymfsRoot& root : u.symfs) {
    const std::string pids =
        u.symfs.size() > 1 && !root.pids.empty() ? " --pid " + pid_list(root.pids) : "";
    os << report << " --symfs " << shell_word(root.dir) << kallsyms << pids << "\n";
  }
  for (const store::SymfsRoot& root : u.symfs) {
    os << "hotspot-perfparser --input " << shell_word(u.recording) << " --sysroot "
       << shell_word(root.dir) << " --debug " << shell_word(u.cache) << kallsyms << "\n";
  }
}

}  // namespace

Verb add_unpack(CLI::App& app) {
  struct Args {
    std::string bundle;
    std::string dir;
    std::string cache;
    bool json = false;
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "unpack",
      {"pdfix unpack", "a bundle of `pdfix archive`, ready for perf report",
       "pdfix unpack [--buildid-dir CACHE] [--json] BUNDLE DIR",
       R"(Unpacks BUNDLE into DIR: DIR/perf.data, and DIR/.debug, a build-id cache holding the
binaries. Prints the commands that read the recording with them, perf's and hotspot's:

  perf --buildid-dir DIR/.debug report -i DIR/perf.data
  hotspot-perfparser --input DIR/perf.data --debug DIR/.debug

With --buildid-dir, the binaries are merged into that cache instead (kept files are never
replaced) and DIR holds perf.data (and symfs/, below) only.

Files without a build-id (Go programs, by default) are kept by path under DIR/symfs/N/,
one root for each set of files that share no path (a host's program and a container's
at the same path go into two). perf reads such a file through --symfs, and once --symfs
is given it no longer looks up the kernel's symbols in the cache, so the command names
them with --kallsyms:

  perf --buildid-dir DIR/.debug report -i DIR/perf.data --symfs DIR/symfs/0 \
       --kallsyms DIR/.debug/.build-id/xx/.../kallsyms [--pid PIDS]

--pid (the processes that map the root's files) is added when there are several roots.
The same root serves hotspot-perfparser as --sysroot; both commands are printed.

DIR must not exist, or be empty; it appears only complete. BUNDLE may be '-' for stdin.
Refused, with nothing written: anything but a tar (optionally compressed) holding
perf.data, and any entry that would land outside DIR (an absolute name, '..', a symbolic
link pointing out of DIR, a hard link, a device). `tar --zstd -xf BUNDLE -C DIR` gives the
same tree. The note goes to stderr, the commands to stdout.

A bundle made without --with-code holds slim copies (symbol tables, unwind tables, notes,
debug information; no code or data, at the offsets they had): perf report, perf script and
hotspot give the same names, source lines and callchains as from whole binaries, and perf
annotate has no code to show. The note says how many; DIR/pdfix-bundle.json names them.

A bundle of `pdfix follow --archive` holds only the binaries that no earlier bundle of its
run holds; its DIR/pdfix-bundle.json names the bundle that holds each of the others, and
they are taken from there, beside BUNDLE (so not from stdin). One missing is an error, with
nothing written; `tar -xf` gives such a bundle's own files only.)",
       exit_status({{kExitError, "A bundle that is refused is not unpacked at all."}})});
  cmd->add_option("BUNDLE", a->bundle, "The bundle ('-': stdin).")->required();
  cmd->add_option("DIR", a->dir, "Where to unpack it (new or empty).")->required();
  cmd->add_option("--buildid-dir", a->cache, "Merge the binaries into this build-id cache.")
      ->type_name("CACHE");
  cmd->add_flag("--json", a->json, "The summary as one JSON object on stdout, not the command.");
  add_quiet_flag(*cmd, a->quiet);
  return {cmd, [a] {
            auto done = store::unpack_bundle(a->bundle, a->dir, {.merge_cache = a->cache});
            if (!done.ok()) return fail(done.status());
            if (a->json) {
              llvm::json::Array roots;
              for (const store::SymfsRoot& r : done->symfs) {
                llvm::json::Array pids;
                for (uint32_t pid : r.pids) pids.push_back(static_cast<int64_t>(pid));
                llvm::json::Array files;
                for (const store::SymfsFile& f : r.files) files.push_back(f.path);
                roots.push_back(llvm::json::Object{
                    {"dir", r.dir}, {"files", std::move(files)}, {"pids", std::move(pids)}});
              }
              llvm::json::Object elsewhere;
              for (const auto& [bundle, files] : done->elsewhere) {
                elsewhere[bundle] = static_cast<int64_t>(files);
              }
              std::ostringstream commands;
              print_commands(*done, commands);
              llvm::json::Array lines;
              for (absl::string_view l : absl::StrSplit(commands.str(), '\n', absl::SkipEmpty())) {
                lines.push_back(std::string(l));
              }
              print_json(llvm::json::Object{{"recording", done->recording},
                                            {"cache", done->cache},
                                            {"binaries", static_cast<int64_t>(done->binaries)},
                                            {"added", static_cast<int64_t>(done->added)},
                                            {"symfs", std::move(roots)},
                                            {"kallsyms", done->kallsyms},
                                            {"slim", static_cast<int64_t>(done->slim.size())},
                                            {"unwind_tables", done->unwind_tables},
                                            {"from_earlier_bundles", std::move(elsewhere)},
                                            {"commands", std::move(lines)}},
                         std::cout);
              return kExitOk;
            }
            Summary say(a->quiet);
            say.out() << "unpack: perf.data and " << done->binaries << " binaries";
            size_t by_path = 0;
            for (const store::SymfsRoot& r : done->symfs) by_path += r.files.size();
            if (by_path > 0) {
              say.out() << ", " << by_path << " without a build-id (under symfs/, for perf "
                        << "report --symfs)";
            }
            if (!a->cache.empty()) {
              say.out() << " (" << done->added << " new to " << done->cache << ")";
            }
            for (const auto& [bundle, files] : done->elsewhere) {
              say.out() << "; " << files << " files from " << bundle
                        << ", an earlier bundle of its chain";
            }
            say.out() << "; report it with:\n";
            if (!done->slim.empty()) {
              say.out() << "  " << done->slim.size() << " of them slim: " << kSlimAnnotate
                        << (done->unwind_tables ? ""
                                                : "; no unwind tables (the recording has no "
                                                  "user stack copies)")
                        << "\n";
            }
            print_commands(*done, std::cout);
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
