// The command line as a user meets it: help, usage errors, stdin/stdout, failures leaving nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

std::string sample_file() { return foreign_corpus_dir() + "/quipper/perf.data.singleprocess-3.4"; }

TEST(Cli, HelpReadsLikeAManPage) {
  for (const char* verb : {"", "copy ", "info ", "dump ", "inject ", "fix ", "fix-module-sizes ",
                           "tag-kernel ", "repair-build-ids ", "buildid-list ", "check ",
                           "archive ", "unpack ", "store ", "fetch ", "compat ", "man "}) {
    RunResult r = sh(pdfix() + " " + verb + "--help");
    EXPECT_EQ(r.status, 0) << verb;
    EXPECT_NE(r.out.find("SYNOPSIS"), std::string::npos) << verb;
    EXPECT_NE(r.out.find("EXIT STATUS"), std::string::npos) << verb;
  }
}

TEST(Cli, UsageErrorsExitTwoWithOneLine) {
  for (const char* args : {"frobnicate x", "copy onlyone", "info --bogus x", "dump a b",
                           "unpack onlyone", "archive --hits"}) {
    RunResult r = sh(pdfix() + " " + args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  // An unknown verb's --help is the same error, not the overview and 0.
  for (const char* verb : {"frobnicate", "fxi"}) {
    RunResult plain = sh(pdfix() + " " + verb);
    RunResult help = sh(pdfix() + " " + verb + " --help");
    EXPECT_EQ(help.status, 2) << verb;
    EXPECT_EQ(help.err, plain.err) << verb;
    EXPECT_TRUE(help.out.empty()) << verb << ": " << help.out;
  }
  // No verb at all: the overview, on stderr.
  RunResult r = sh(pdfix());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("SYNOPSIS"), std::string::npos) << r.err;
}

TEST(Cli, FixHelpListsEveryPassAndItsOptions) {
  RunResult r = sh(pdfix() + " fix --help");
  ASSERT_EQ(r.status, 0);
  for (const char* text : {"fix-module-sizes", "tag-kernel", "inject --buildids", "--proc-modules",
                           "--modules-dir", "--known-build-ids", "--buildid-dir", "--sysroot"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
  // Each option is described once, where its pass declares it: the single verb shows the same.
  const std::string line = "--known-build-ids LIST";
  RunResult inject = sh(pdfix() + " inject --help");
  EXPECT_NE(inject.out.find(line), std::string::npos) << inject.out;
  EXPECT_NE(r.out.find(line), std::string::npos);
}

TEST(Cli, VersionAndSuggestions) {
  RunResult v = sh(pdfix() + " --version");
  EXPECT_EQ(v.status, 0);
  EXPECT_TRUE(v.out.starts_with("pdfix ")) << v.out;
  EXPECT_EQ(sh(pdfix() + " version").out, v.out);

  RunResult verb = sh(pdfix() + " fxi a b");
  EXPECT_EQ(verb.status, 2);
  EXPECT_NE(verb.err.find("did you mean 'fix'?"), std::string::npos) << verb.err;
  RunResult option = sh(pdfix() + " fix --sysrot / a b");
  EXPECT_EQ(option.status, 2);
  EXPECT_NE(option.err.find("did you mean '--sysroot'?"), std::string::npos) << option.err;
  EXPECT_EQ(std::count(option.err.begin(), option.err.end(), '\n'), 1) << option.err;
}

TEST(Cli, DirectoriesThatDoNotExistAreAnError) {
  const std::string dir = temp_dir();
  for (const char* option : {"--sysroot", "--modules-dir", "--buildid-dir"}) {
    RunResult r = sh(pdfix() + " fix " + option + " /nonexistent/dir " + sample_file() + " " + dir +
                     "/out.data");
    EXPECT_EQ(r.status, 2) << option;
    EXPECT_NE(r.err.find("/nonexistent/dir"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/out.data")) << option;
  }
  fs::remove_all(dir);
}

// Options a pass reads several of (each --jit-dir) are taken every time they are given, and each
// must exist.
TEST(Cli, ARepeatableOptionTakesEveryValue) {
  const std::string dir = temp_dir();
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b");
  RunResult r = sh(pdfix() + " fix -q --jit-dir " + dir + "/a --jit-dir " + dir + "/b " +
                   sample_file() + " " + dir + "/out.data");
  EXPECT_EQ(r.status, 0) << r.err;
  r = sh(pdfix() + " fix -q --jit-dir " + dir + "/a --jit-dir " + dir + "/missing " +
         sample_file() + " " + dir + "/out2.data");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(dir + "/missing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/out2.data"));
  fs::remove_all(dir);
}

TEST(Cli, MissingInputIsAClearError) {
  RunResult r = sh(pdfix() + " info /nonexistent/perf.data");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("/nonexistent/perf.data"), std::string::npos) << r.err;
}

TEST(Cli, UnwritableOutputLeavesNothingAndKeepsTheInput) {
  const std::string dir = temp_dir();
  fs::copy_file(sample_file(), dir + "/in.data");
  const auto written = fs::last_write_time(dir + "/in.data");
  // A directory that is not there, and a "directory" that is the input file itself.
  for (const std::string& out : {dir + "/no/such/dir/out.data", dir + "/in.data/out.data"}) {
    RunResult r = sh(pdfix() + " copy " + quote(dir + "/in.data") + " " + quote(out));
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_NE(r.err.find(out.substr(0, out.rfind('/'))), std::string::npos) << r.err;
    EXPECT_TRUE(same_file(dir + "/in.data", sample_file()));
    EXPECT_EQ(fs::last_write_time(dir + "/in.data"), written);
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  EXPECT_EQ(names, (std::vector<std::string>{"in.data"}));
  fs::remove_all(dir);
}

TEST(Cli, CopyToStdoutWhetherSeekableOrNot) {
  const std::string dir = temp_dir();
  RunResult r = sh(pdfix() + " copy " + sample_file() + " - > " + dir + "/seekable.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(sample_file(), dir + "/seekable.data"));
  r = sh(pdfix() + " copy " + sample_file() + " - | cat > " + dir + "/piped.data");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(sample_file(), dir + "/piped.data"));
  fs::remove_all(dir);
}

TEST(Cli, AProgressBarOnlyWhenStderrIsATerminal) {
  // A stream that stalls for a second is long work; script(1) gives pdfix a terminal.
  const std::string dir = temp_dir();
  const std::string in = corpus_dir() + "/ls.pipe.data";
  const std::string stalling = "{ head -c 3000 " + in + "; sleep 1; tail -c +3001 " + in + "; }";
  RunResult tty =
      sh("script -qec " + quote(stalling + " | " + pdfix() + " copy - " + dir + "/tty.data") +
         " /dev/null");
  ASSERT_EQ(tty.status, 0) << tty.err;
  // The bar is drawn over itself with \r and erased when the work is done.
  EXPECT_NE(tty.out.find("\rcopy "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find(" MiB"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\r\033[K"), std::string::npos) << tty.out;
  EXPECT_TRUE(same_file(in, dir + "/tty.data"));
  // Not a terminal: not a byte of it.
  RunResult plain = sh(stalling + " | " + pdfix() + " copy - " + dir + "/plain.data");
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
  fs::remove_all(dir);
}

TEST(Cli, OutputsAreReadableByTheirOwnerOnly) {
  // perf writes perf.data 0600: a recording holds command lines, paths and memory contents.
  const std::string dir = temp_dir();
  const std::string in = dir + "/in.data";
  fs::copy_file(sample_file(), in);
  fs::permissions(in, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                          fs::perms::others_read);
  for (const char* verb : {"copy", "fix"}) {
    const std::string out = dir + "/" + verb + ".data";
    ASSERT_EQ(sh(pdfix() + " " + verb + " " + in + " " + out).status, 0) << verb;
    EXPECT_EQ(fs::status(out).permissions(), fs::perms::owner_read | fs::perms::owner_write)
        << verb;
  }
  // A stricter input keeps its stricter permissions.
  fs::permissions(in, fs::perms::owner_read);
  ASSERT_EQ(sh(pdfix() + " copy " + in + " " + dir + "/strict.data").status, 0);
  EXPECT_EQ(fs::status(dir + "/strict.data").permissions(), fs::perms::owner_read);
  fs::remove_all(dir);
}

// OUT that is IN by any name is refused before anything is read or written, and IN keeps every
// byte: the same path, a hard link, a symbolic link, /proc/self/fd, stdout redirected onto it.
TEST(Cli, AnOutputThatIsTheInputIsRefused) {
  const std::string dir = temp_dir();
  const std::string in = dir + "/in.data";
  fs::copy_file(sample_file(), in);
  fs::create_hard_link(in, dir + "/hard.data");
  fs::create_symlink("in.data", dir + "/soft.data");
  const std::vector<std::string> outs = {in, dir + "/hard.data", dir + "/soft.data",
                                         "/proc/self/fd/3 3<" + in, "- 1<>" + in};
  for (const char* verb : {"copy", "fix", "inject --buildids", "compat --for 6.1"}) {
    for (const std::string& out : outs) {
      RunResult r = sh(pdfix() + " " + verb + " " + in + " " + out);
      EXPECT_EQ(r.status, 2) << verb << " " << out;
      EXPECT_NE(r.err.find("pdfix never writes its input"), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_TRUE(same_file(sample_file(), in)) << verb << " " << out << " wrote its input";
    }
  }
  // The bundle too, and stdin read from the file that OUT names.
  for (const std::string& cmd :
       {"archive " + in + " " + dir + "/hard.data",
        "fix --archive " + in + " " + in + " " + dir + "/out.data", "copy - " + in + " < " + in}) {
    RunResult r = sh(pdfix() + " " + cmd);
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_NE(r.err.find("pdfix never writes its input"), std::string::npos) << r.err;
    EXPECT_TRUE(same_file(sample_file(), in)) << cmd << " wrote its input";
  }
  EXPECT_FALSE(fs::exists(dir + "/out.data"));
  // Nothing else was left beside them.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3);
  fs::remove_all(dir);
}

// -q silences what an action says on stderr, keeps errors, and leaves reports alone.
TEST(Cli, QuietKeepsErrorsOnly) {
  const std::string dir = temp_dir();
  for (const char* verb : {"fix", "inject --buildids", "fix-module-sizes", "tag-kernel"}) {
    RunResult loud = sh(pdfix() + " " + verb + " " + sample_file() + " " + dir + "/a.data");
    ASSERT_EQ(loud.status, 0) << loud.err;
    EXPECT_FALSE(loud.err.empty()) << verb;
    RunResult quiet = sh(pdfix() + " " + verb + " -q " + sample_file() + " " + dir + "/b.data");
    ASSERT_EQ(quiet.status, 0) << quiet.err;
    EXPECT_EQ(quiet.err, "") << verb;
    EXPECT_EQ(quiet.out, "") << verb;
    EXPECT_TRUE(same_file(dir + "/a.data", dir + "/b.data")) << verb;
  }
  RunResult bad = sh(pdfix() + " fix -q /nonexistent " + dir + "/c.data");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("/nonexistent"), std::string::npos) << bad.err;
  // The summary goes to stderr, --json to stdout, or to stderr when stdout carries OUT.
  RunResult json = sh(pdfix() + " fix --json " + sample_file() + " " + dir + "/d.data");
  EXPECT_TRUE(json.out.starts_with("{")) << json.out;
  EXPECT_EQ(json.err, "");
  json = sh(pdfix() + " fix --json " + sample_file() + " - > " + dir + "/e.data");
  EXPECT_TRUE(json.err.starts_with("{")) << json.err;
  EXPECT_TRUE(same_file(dir + "/d.data", dir + "/e.data"));
  // check -q prints nothing: its status is the answer.
  RunResult check = sh(pdfix() + " check -q " + sample_file());
  EXPECT_EQ(check.out + check.err, "");
  EXPECT_EQ(check.status, sh(pdfix() + " check " + sample_file()).status);
  fs::remove_all(dir);
}

// Help shows the value's name, never the parser's labels, and ranges in words.
TEST(Cli, HelpHasNoParserLabels) {
  for (const char* verb : {"fix", "copy", "archive", "store", "fetch", "check", "unpack", "inject",
                           "compat", "fix-module-sizes", "buildid-list", "info"}) {
    RunResult r = sh(pdfix() + " " + verb + " --help");
    ASSERT_EQ(r.status, 0) << verb;
    for (const char* label : {":DIR", ":INT", ":FILE", ":TEXT", "in [", "REQUIRED", ":{"}) {
      EXPECT_EQ(r.out.find(label), std::string::npos) << verb << " shows " << label << "\n"
                                                      << r.out;
    }
  }
  RunResult fix = sh(pdfix() + " fix --help");
  EXPECT_NE(fix.out.find("--sysroot DIR "), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find("--zstd-level N "), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find("1 to 19"), std::string::npos) << fix.out;
  // Every verb's EXIT STATUS has 0 and 2 with their one meaning.
  EXPECT_NE(fix.out.find("0  done."), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find("2  not done:"), std::string::npos) << fix.out;
  EXPECT_NE(fix.out.find("3  done, but not all there: (with --archive or --store) with --strict"),
            std::string::npos)
      << fix.out;
}

// --for takes the perf versions pdfix knows, and says which in one line.
TEST(Cli, ForTakesOnlyKnownVersions) {
  const std::string dir = temp_dir();
  for (const char* version : {"99", "6.40", "abc", "2.6", "7.9"}) {
    RunResult r =
        sh(pdfix() + " compat --for " + version + " " + sample_file() + " " + dir + "/out.data");
    EXPECT_EQ(r.status, 2) << version;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.find("--for: --for"), std::string::npos) << r.err;
    if (std::string(version) != "2.6") {
      EXPECT_NE(r.err.find("known: 3.13 to 3.19, 4.0 to 4.20, 5.0 to 5.19, 6.0 to 6.19"),
                std::string::npos)
          << r.err;
    }
    EXPECT_FALSE(fs::exists(dir + "/out.data"));
  }
  for (const char* version : {"6.1", "5.10.0-21-amd64", "4.20", "7.0", "oldest"}) {
    RunResult r =
        sh(pdfix() + " compat --for " + version + " " + sample_file() + " " + dir + "/ok.data");
    EXPECT_EQ(r.status, 0) << version << ": " << r.err;
  }
  fs::remove_all(dir);
}

// pdfix.1 is built from the same pages as --help, renders with man, and is installed.
TEST(Cli, ManPageIsBuiltRenderedAndInstalled) {
  const std::string page = fs::path(pdfix_binary()).parent_path() / "pdfix.1";
  ASSERT_TRUE(fs::exists(page)) << page;
  RunResult man = sh("MANWIDTH=100 man -l " + quote(page) + " 2>&1 | col -b");
  ASSERT_EQ(man.status, 0) << man.out;
  for (const char* text : {"pdfix - repair and enrich perf.data", "EXIT STATUS", "pdfix fix",
                           "pdfix archive", "pdfix check", "--known-build-ids LIST",
                           "fix would repair something", "not done: bad usage"}) {
    EXPECT_NE(man.out.find(text), std::string::npos) << text << "\n" << man.out;
  }
  EXPECT_EQ(man.out.find("\\f"), std::string::npos) << "raw roff escapes";
  // The page is what `pdfix man` prints now: one source.
  RunResult now = sh(pdfix() + " man | cmp - " + quote(page));
  EXPECT_EQ(now.status, 0) << now.out << now.err;
  const std::string dir = temp_dir();
  RunResult install = sh("cmake --install " + quote(fs::path(pdfix_binary()).parent_path()) +
                         " --prefix " + quote(dir));
  ASSERT_EQ(install.status, 0) << install.out << install.err;
  EXPECT_TRUE(fs::exists(dir + "/bin/pdfix"));
  EXPECT_TRUE(same_file(page, dir + "/share/man/man1/pdfix.1"));
  fs::remove_all(dir);
}

TEST(Cli, InfoJsonHasRecordCountsAndDecodedFeatures) {
  RunResult r = sh(pdfix() + " info --json " + sample_file());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"record_counts\""), std::string::npos);
  EXPECT_NE(r.out.find("\"name\": \"hostname\""), std::string::npos);
  // The JSON is valid: python's parser is the referee.
  RunResult check = sh(pdfix() + " info --json " + sample_file() +
                       " | python3 -c 'import json,sys; d=json.load(sys.stdin); "
                       "assert d[\"record_counts\"][\"SAMPLE\"] > 0'");
  EXPECT_EQ(check.status, 0) << check.err;
}

TEST(Cli, DumpJsonIsOneObjectPerLine) {
  RunResult r = sh(pdfix() + " dump --json " + sample_file() +
                   " | python3 -c 'import json,sys; n=sum(1 for l in sys.stdin if json.loads(l)); "
                   "print(n)'");
  ASSERT_EQ(r.status, 0) << r.err;
  uint64_t total = 0;
  for (const auto& [name, n] : pdfix_counts(sample_file())) total += n;
  EXPECT_EQ(std::stoull(r.out), total);
}

TEST(Cli, BigEndianFixtureIsReadAndCopied) {
  testing::PerfDataBuilder b(std::endian::big);
  // perf always writes HOSTNAME; readers rely on it to tell how a foreign bitmap was written.
  b.attr({})
      .string_feature(3, "zhost")
      .string_feature(6, "s390x")
      .comm(7, 7, "zvm")
      .mmap(7, 0x1000, 0x2000, 0, "/bin/sh");
  const std::string path = testing::write_temp(b.build());
  RunResult r = sh(pdfix() + " info " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("big-endian"), std::string::npos);
  EXPECT_NE(r.out.find("s390x"), std::string::npos);
  r = sh(pdfix() + " dump " + path);
  EXPECT_NE(r.out.find("comm=zvm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filename=/bin/sh"), std::string::npos) << r.out;
  r = sh(pdfix() + " copy " + path + " " + path + ".out");
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(same_file(path, path + ".out"));
}

}  // namespace
}  // namespace pdfix::e2e
