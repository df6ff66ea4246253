// The commands the README and docs/ show. Those under a `<!-- runnable -->` line run as written,
// line by line and in order, in a scratch directory (each line must exit 0); every pdfix command
// shown anywhere names a verb, and options that the verb's --help lists. The pages' size,
// paragraphs, links and paths are lint's (scripts/docs_guard.py), which needs no build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> pages() {
  std::vector<std::string> out = {source_dir() + "/README.md", source_dir() + "/tests/README.md",
                                  source_dir() + "/bench/README.md"};
  for (const auto& e : fs::directory_iterator(source_dir() + "/docs")) {
    if (e.path().extension() == ".md") out.push_back(e.path());
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

// The code lines (indented four spaces) of the blocks under a runnable marker.
std::vector<std::string> runnable(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != "<!-- runnable -->") continue;
    for (++i; i < lines.size() && lines[i].starts_with("    "); ++i)
      out.push_back(lines[i].substr(4));
  }
  return out;
}

TEST(Docs, RunnableCommandsRunAsWritten) {
  PDFIX_NEEDS_PERF_RECORD();
  size_t ran = 0;
  for (const std::string& page : pages()) {
    const std::vector<std::string> commands = runnable(lines_of(page));
    if (commands.empty()) continue;
    const std::string dir = temp_dir();
    fs::create_directories(dir + "/home");
    // The pages are read in a clone's root, where corpora/ is.
    fs::create_directory_symlink(source_dir() + "/corpora", dir + "/corpora");
    const std::string env =
        "cd " + quote(dir) + " && HOME=" + quote(dir + "/home") +
        " PERF_BUILDID_DIR= PATH=" + quote(fs::path(pdfix_binary()).parent_path().string()) +
        ":\"$PATH\" ";
    for (const std::string& command : commands) {
      RunResult r = sh(env + "bash -c " + quote(command));
      EXPECT_EQ(r.status, 0) << page << ": " << command << "\n" << r.out << r.err;
      ++ran;
    }
  }
  EXPECT_GE(ran, 10u);
}

// The options that `pdfix VERB --help` lists, by verb; empty for a verb it does not know.
std::set<std::string> options_of(const std::string& verb) {
  static std::map<std::string, std::set<std::string>> known;
  auto [it, added] = known.try_emplace(verb);
  if (!added) return it->second;
  RunResult r = sh(pdfix() + " " + verb + " --help");
  if (r.status != 0) return it->second;
  static const std::regex option("--[a-z][a-z0-9-]*");
  for (std::sregex_iterator m(r.out.begin(), r.out.end(), option), end; m != end; ++m) {
    it->second.insert(m->str());
  }
  return it->second;
}

TEST(Docs, EveryPdfixCommandShownNamesAVerbAndItsOptions) {
  static const std::regex command(R"re((?:^|[\s|$(])pdfix ([a-z][a-z-]*)([^|;#>)"$]*))re");
  static const std::regex option("(?:^|\\s)(--[a-z][a-z0-9-]*)");
  size_t checked = 0;
  for (const std::string& page : pages()) {
    for (const std::string& line : lines_of(page)) {
      if (!line.starts_with("    ")) continue;
      for (std::sregex_iterator m(line.begin(), line.end(), command), end; m != end; ++m) {
        const std::string verb = (*m)[1];
        const std::string rest = (*m)[2];
        if (rest.starts_with(":")) continue;  // a summary line pdfix printed, not a command
        const std::set<std::string> options = options_of(verb);
        EXPECT_FALSE(options.empty()) << page << ": no verb '" << verb << "': " << line;
        for (std::sregex_iterator o(rest.begin(), rest.end(), option); o != end; ++o) {
          EXPECT_TRUE(options.contains((*o)[1]))
              << page << ": pdfix " << verb << " --help has no " << (*o)[1] << ": " << line;
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 40u);
}

}  // namespace
}  // namespace pdfix::e2e
