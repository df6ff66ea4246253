#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/man_page.h"
#include "cli/verb.h"
#include "io/cleanup.h"
#include "llvm/ADT/StringRef.h"
#include "resolve/host.h"

#ifndef PDFIX_VERSION
#define PDFIX_VERSION "unknown"
#endif

namespace pdfix::cli {
namespace {

Page root_page() {
  return {
      "pdfix", "repair and enrich perf.data recordings before they are archived",
      "pdfix VERB [OPTIONS] ARGS...\npdfix VERB --help\npdfix --version",
      R"(IN and OUT may be '-' for stdin/stdout. Outputs are written to a temporary file and renamed
when complete; the input is never written (an OUT that is IN, by any name, is refused).

Reports (info, dump, buildid-list, check, and every --json) go to stdout; what an action did
(fix and the repair verbs, archive, store, fetch, unpack's note) goes to stderr, and -q
silences it. An error is one line on stderr naming the file offset and record concerned.)",
      exit_status({{kExitFixable, "(check) the recording is not ready to archive."},
                   {kExitIncomplete,
                    "(check, archive, store, fetch, fix --archive/--store) something the job "
                    "needs is not there: see each verb's EXIT STATUS."}})};
}

// The known name closest to `word`, when it is close enough to be a likely slip.
std::string closest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  unsigned best_distance = 3;
  for (const std::string& name : names) {
    const unsigned d = llvm::StringRef(word).edit_distance(name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

// A usage error as one line, with a suggestion for a misspelt verb or option.
int usage_error(const CLI::App& root, const CLI::Error& e) {
  const CLI::App* at = &root;
  for (const CLI::App* sub : root.get_subcommands()) at = sub;
  const std::string where = at == &root ? "pdfix" : "pdfix " + at->get_name();
  std::string hint;
  std::vector<std::string> names;
  std::vector<std::string> unexpected = at->remaining();
  if (at == &root) {
    for (const CLI::App* sub : root.get_subcommands({})) names.push_back(sub->get_name());
  } else {
    for (const CLI::Option* opt : at->get_options()) {
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    }
  }
  for (const std::string& word : unexpected) {
    const std::string guess = closest(word.substr(0, word.find('=')), names);
    if (!guess.empty()) {
      hint = "; did you mean '" + guess + "'?";
      break;
    }
  }
  std::string what = e.what();
  if (at == &root && !unexpected.empty()) what = "unknown verb '" + unexpected.front() + "'";
  std::cerr << where << ": " << what << hint << " (see '" << where << " --help')\n";
  return kExitError;
}

}  // namespace
}  // namespace pdfix::cli

namespace pdfix::cli {
namespace {

int run(int argc, char** argv) {
  // The question scripts ask most needs none of the verbs built.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::cout << "pdfix " << PDFIX_VERSION << "\n";
    return kExitOk;
  }
  CLI::App app;
  app.name("pdfix");
  app.formatter(std::make_shared<ManPage>(root_page()));
  app.set_version_flag("--version", std::string("pdfix ") + PDFIX_VERSION);
  app.require_subcommand(1);
  const pdfix::resolve::LiveHost host;

  // Building every verb's options and pages is a millisecond of each start: only the verb named
  // is built. With none named (or `man`), all are, for the root's --help and its suggestions.
  const std::vector<std::pair<std::string, std::function<Verb()>>> others = {
      {"copy", [&] { return add_copy(app); }},
      {"info", [&] { return add_info(app); }},
      {"dump", [&] { return add_dump(app); }},
      {"buildid-list", [&] { return add_buildid_list(app); }},
      {"check", [&] { return add_check(app, host); }},
      {"archive", [&] { return add_archive(app, host); }},
      {"unpack", [&] { return add_unpack(app); }},
      {"store", [&] { return add_store(app, host); }},
      {"fetch", [&] { return add_fetch(app, host); }},
      {"export", [&] { return add_export(app, host); }},
      {"follow", [&] { return add_follow(app, host); }},
  };
  const std::string named = argc > 1 ? argv[1] : "";
  const bool other =
      std::any_of(others.begin(), others.end(), [&](const auto& o) { return o.first == named; });
  std::vector<Verb> verbs;
  if (!other) verbs = add_repairs(app, host, named);
  const bool all = verbs.size() > 1;
  for (const auto& [name, add] : others) {
    if (all || name == named) verbs.push_back(add());
  }
  CLI::App* version =
      add_command(app, "version",
                  {"pdfix version", "print pdfix's version", "pdfix version", "", exit_status()});
  verbs.push_back({version, [] {
                     std::cout << "pdfix " << PDFIX_VERSION << "\n";
                     return kExitOk;
                   }});
  CLI::App* man = add_command(
      app, "man",
      {"pdfix man", "print this manual as a man page (roff), the one the build installs",
       "pdfix man | man -l -",
       "Every verb's page, as --help shows it, in one pdfix(1). The build writes it to\n"
       "build/pdfix.1 and `cmake --install` puts it under share/man/man1.",
       exit_status()});
  verbs.push_back({man, [&app] {
                     std::cout << roff_manual(app, PDFIX_VERSION);
                     return kExitOk;
                   }});

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    const CLI::App* at = &app;
    for (const CLI::App* sub : app.get_subcommands()) at = sub;
    // `pdfix nosuchverb --help` is the unknown verb's error, as without --help: no page is its.
    if (at == &app && !app.remaining().empty()) {
      return usage_error(app, CLI::ExtrasError(app.remaining()));
    }
    std::cout << at->help();
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (argc < 2) {
      std::cerr << app.help();
      return kExitError;
    }
    return usage_error(app, e);
  }
  for (const Verb& v : verbs) {
    if (v.command->parsed()) return v.run();
  }
  return kExitError;
}

}  // namespace
}  // namespace pdfix::cli

namespace {

// With stdin, stdout or stderr closed, the next file pdfix opened would take its number, and
// messages meant for the terminal would be written into it. A closed one is held by /dev/null,
// opened read-only, so that writing to it still fails.
void hold_standard_fds() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int held = open("/dev/null", O_RDONLY);
      if (held != fd && held >= 0) close(held);
    }
  }
}

// What a verb printed on stdout must have arrived: a full disk or a closed stdout is an error.
int stdout_written(int status) {
  std::cout.flush();
  if (!std::cout.fail() && fflush(stdout) == 0) return status;
  std::cerr << "pdfix: cannot write <stdout>: " << std::strerror(errno) << "\n";
  return pdfix::kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  hold_standard_fds();
  pdfix::io::install_cleanup_handlers();
  try {
    return stdout_written(pdfix::cli::run(argc, argv));
  } catch (const std::exception& e) {
    // Errors are values inside pdfix; what gets here is the C++ library's (out of memory, say).
    std::cerr << "pdfix: " << e.what() << "\n";
    return pdfix::kExitError;
  }
}
