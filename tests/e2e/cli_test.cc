// The command line as a user meets it: help, usage errors, stdin/stdout, failures leaving nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

std::string sample_file() {
  return std::string(PDFIX_FOREIGN_CORPUS) + "/quipper/perf.data.singleprocess-3.4";
}

TEST(Cli, HelpReadsLikeAManPage) {
  for (const char* verb : {"", "copy ", "info ", "dump ", "inject ", "fix ", "fix-module-sizes ",
                           "tag-kernel ", "repair-build-ids ", "buildid-list ", "check ",
                           "archive ", "unpack ", "store ", "fetch "}) {
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
  const std::string in = std::string(PDFIX_CORPUS) + "/ls.pipe.data";
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

TEST(Cli, OutputOverTheInputPathIsSafe) {
  // The temp file + rename means even OUT == IN never reads a half-written input.
  const std::string dir = temp_dir();
  const std::string f = dir + "/same.data";
  fs::copy_file(sample_file(), f);
  RunResult r = sh(pdfix() + " copy " + f + " " + f);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(sample_file(), f));
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
