// pdfix buildid-list against the machine's perf buildid-list.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Sorted lines. perf 6.1 names a vdso without a build-id after a temporary copy of this
// machine's own vdso (/tmp/perf-vdso.so-XXXXXX), a name that says nothing about the recording:
// it is read as "[vdso]".
std::vector<std::string> sorted_lines(const std::string& text) {
  static const std::regex temp_vdso(R"(/tmp/perf-vdso\.so-\w+$)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) lines.push_back(std::regex_replace(l, temp_vdso, "[vdso]"));
  std::sort(lines.begin(), lines.end());
  return lines;
}

class BuildIdListCorpus : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(BuildIdListCorpus, SameAsPerf) {
  const CorpusFile& f = GetParam();
  RunResult perf = sh("perf buildid-list -i " + quote(f.path) + " 2>/dev/null");
  ASSERT_EQ(perf.status, 0) << f.name;
  RunResult ours = sh(pdfix() + " buildid-list " + quote(f.path));
  ASSERT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(sorted_lines(ours.out), sorted_lines(perf.out));
}

INSTANTIATE_TEST_SUITE_P(Corpus, BuildIdListCorpus, ::testing::ValuesIn(perf_read_corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });

TEST(BuildIdList, HitsFollowTheCallchain) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string dir = temp_dir();
  const std::string rec = dir + "/g.data";
  ASSERT_EQ(sh("perf record -g -o " + quote(rec) +
               " -- sh -c 'for i in 1 2 3; do ls -R /usr/lib > /dev/null; done' 2>&1")
                .status,
            0);
  // The DSOs perf itself resolves sample and callchain addresses to.
  std::set<std::string> expected;
  std::istringstream frames(sh("perf script -F ip,dso -i " + quote(rec) + " 2>/dev/null").out);
  static const std::regex dso(R"(\(([^)]+)\)$)");
  std::string l;
  while (std::getline(frames, l)) {
    std::smatch m;
    if (std::regex_search(l, m, dso) && m[1] != "[unknown]") expected.insert(m[1]);
  }
  RunResult r = sh(pdfix() + " buildid-list --hits " + quote(rec));
  ASSERT_EQ(r.status, 0) << r.err;
  // "%-40s %s": a DSO that only a callchain hit has no id in the table, and an empty one here.
  std::set<std::string> got;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) got.insert(line.substr(41));
  EXPECT_EQ(got, expected);
  // The JSON form says the same.
  RunResult json = sh(pdfix() + " buildid-list --hits --json " + quote(rec));
  ASSERT_EQ(json.status, 0);
  for (const auto& n : expected) EXPECT_NE(json.out.find("\"" + n + "\""), std::string::npos) << n;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pdfix::e2e
