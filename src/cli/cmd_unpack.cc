#include <iostream>

#include "cli/verb.h"
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
binaries. Prints the command that reports the recording with them:

  perf --buildid-dir DIR/.debug report -i DIR/perf.data

With --buildid-dir, the binaries are merged into that cache instead (kept files are never
replaced) and DIR holds perf.data only.

DIR must not exist, or be empty; it appears only complete. BUNDLE may be '-' for stdin.
Refused, with nothing written: anything but a tar (optionally compressed) holding
perf.data, and any entry that would land outside DIR (an absolute name, '..', a symbolic
link pointing out of DIR, a hard link, a device). `tar --zstd -xf BUNDLE -C DIR` gives the
same tree. The note goes to stderr, the command to stdout.)",
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
              print_json(llvm::json::Object{{"recording", done->recording},
                                            {"cache", done->cache},
                                            {"binaries", static_cast<int64_t>(done->binaries)},
                                            {"added", static_cast<int64_t>(done->added)}},
                         std::cout);
              return kExitOk;
            }
            Summary say(a->quiet);
            say.out() << "unpack: perf.data and " << done->binaries << " binaries";
            if (!a->cache.empty()) {
              say.out() << " (" << done->added << " new to " << done->cache << ")";
            }
            say.out() << "; report it with:\n";
            std::cout << "perf --buildid-dir " << shell_word(done->cache) << " report -i "
                      << shell_word(done->recording) << "\n";
            return kExitOk;
          }};
}

}  // namespace pdfix::cli
