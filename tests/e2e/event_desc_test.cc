// The file agrees with itself: after every verb that changes an attr (unwind, compat --for, fix),
// EVENT_DESC says what the attrs say. The oracles are perf 6.1's two printers of one attr, `perf
// evlist -v` (the attrs section, which perf parses samples with) and `perf report --header-only`
// (EVENT_DESC), and a second reader written apart from pdfix that takes the attrs from EVENT_DESC
// (event_desc_reader.py) and must parse every sample with them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {

// Each event's attr as `perf evlist -v` prints it (from the attrs section) and as `perf report
// --header-only` prints it (from EVENT_DESC), both from its "type" field on, in one spelling.
struct Printed {
  std::vector<std::string> attrs;
  std::vector<std::string> event_desc;
};

Printed printed(const std::string& path) {
  Printed p;
  RunResult evlist = sh("perf evlist -v -i " + quote(path) + " 2>/dev/null");
  for (absl::string_view line : absl::StrSplit(evlist.out, '\n', absl::SkipEmpty())) {
    const size_t at = line.find(": type: ");
    if (at != absl::string_view::npos) p.attrs.emplace_back(line.substr(at + 2));
  }
  RunResult header = sh("perf report --header-only -i " + quote(path) + " 2>/dev/null");
  for (absl::string_view line : absl::StrSplit(header.out, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "# event : ")) continue;
    const size_t at = line.find(", type = ");
    if (at != absl::string_view::npos) {
      p.event_desc.push_back(absl::StrReplaceAll(line.substr(at + 2), {{" = ", ": "}}));
    }
  }
  return p;
}

// The events perf prints from both copies, which must be the same; how many were compared.
size_t expect_agree(const std::string& path, const std::string& what) {
  const Printed p = printed(path);
  EXPECT_FALSE(p.attrs.empty()) << what << ": perf evlist reads no event";
  if (p.event_desc.empty()) return 0;  // a file without EVENT_DESC: nothing to disagree
  EXPECT_EQ(p.attrs, p.event_desc) << what;
  return p.attrs.size();
}

struct Read {
  int status = -1;
  int64_t samples = 0;
  int64_t parsed = 0;
  int64_t user_frames = 0;
  std::string text;
};

Read read_by_event_desc(const std::string& path) {
  RunResult r =
      sh("python3 " + quote(source_dir() + "/tests/e2e/event_desc_reader.py") + " " + quote(path));
  Read out{r.status, 0, 0, 0, r.out + r.err};
  if (r.status == 0 || r.status == 1) {
    const llvm::json::Object o = parse_object(r.out);
    out.samples = int_of(o, "samples");
    out.parsed = int_of(o, "parsed");
    out.user_frames = int_of(o, "user_frames");
  }
  return out;
}

class EventDescTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
  }
  // A --call-graph dwarf recording of a shell loop, in file or pipe mode.
  std::string record_dwarf(const std::string& name, bool pipe) {
    const std::string out = dir_ + "/" + name;
    const std::string loop = "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'";
    RunResult r =
        sh("perf record -q --call-graph dwarf -F 999 -o " +
           (pipe ? std::string("- -- ") + loop + " > " + quote(out) : quote(out) + " -- " + loop));
    EXPECT_EQ(r.status, 0) << r.err;
    return out;
  }
  std::string dir_;
};

TEST_F(EventDescTest, UnwoundFileAndStreamAreReadWithTheirEventDesc) {
  const std::string file = record_dwarf("dwarf.data", false);
  const std::string stream = record_dwarf("dwarf.pipe.data", true);
  // perf's own recordings agree, and the second reader parses them as they are.
  EXPECT_EQ(expect_agree(file, "perf's recording"), 1u);
  for (const std::string& in : {file, stream}) {
    const Read before = read_by_event_desc(in);
    ASSERT_EQ(before.status, 0) << before.text;
    ASSERT_GT(before.samples, 10) << before.text;
  }
  for (const std::string verb : {"unwind", "fix --unwind"}) {
    for (const std::string& in : {file, stream}) {
      const std::string out = in + "." + verb.substr(0, 3) + ".out";
      RunResult r = sh(pdfix() + " " + verb + " -q " + quote(in) + " " + quote(out));
      ASSERT_EQ(r.status, 0) << verb << ": " << r.err;
      if (in == file) {
        EXPECT_EQ(expect_agree(out, verb), 1u);
      }
      // Every sample parses with EVENT_DESC's layout (no user registers or stack any more), and
      // the callchains carry the unwound user frames.
      const Read after = read_by_event_desc(out);
      EXPECT_EQ(after.status, 0) << verb << " " << in << ": " << after.text;
      EXPECT_EQ(after.parsed, read_by_event_desc(in).samples) << after.text;
      EXPECT_GT(after.user_frames, after.samples) << after.text;
      // pdfix check finds nothing to say about the two copies.
      RunResult check = sh(pdfix() + " check " + quote(out));
      EXPECT_EQ(check.out.find("EVENT_DESC"), std::string::npos) << check.out;
    }
  }
}

TEST_F(EventDescTest, CheckReportsCopiesThatDisagreeAndFixMakesThemAgree) {
  const std::string in = record_dwarf("dwarf.data", false);
  // The attrs section edited by hand: the sample frequency (attr offset 16) of the first event,
  // which nothing else depends on, 999 -> 777; EVENT_DESC still says 999.
  const std::string edited = dir_ + "/edited.data";
  RunResult r = sh("cp " + quote(in) + " " + quote(edited) + " && python3 -c '" +
                   "import struct,sys; f=open(sys.argv[1],\"r+b\"); h=f.read(104); "
                   "attrs=struct.unpack_from(\"<Q\",h,24)[0]; f.seek(attrs+16); "
                   "f.write(struct.pack(\"<Q\",777))' " +
                   quote(edited));
  ASSERT_EQ(r.status, 0) << r.err;
  const Printed p = printed(edited);
  ASSERT_EQ(p.attrs.size(), 1u);
  ASSERT_NE(p.attrs, p.event_desc) << "the edit did not take";

  RunResult check = sh(pdfix() + " check " + quote(edited));
  EXPECT_NE(check.out.find("EVENT_DESC feature: event 0 (cpu-clock:ppp): sample_period 999 "
                           "differs from the attrs' 777"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("[fixed by fix]"), std::string::npos) << check.out;

  const std::string fixed = dir_ + "/fixed.data";
  r = sh(pdfix() + " fix -q " + quote(edited) + " " + quote(fixed));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(expect_agree(fixed, "fix"), 1u);
  EXPECT_NE(printed(fixed).event_desc.front().find("sample_freq }: 777"), std::string::npos);
  // `copy` writes the file as it was, disagreement and all.
  const std::string copied = dir_ + "/copied.data";
  r = sh(pdfix() + " copy " + quote(edited) + " " + quote(copied) + " && cmp " + quote(edited) +
         " " + quote(copied));
  EXPECT_EQ(r.status, 0) << r.err;
}

// Every verb that changes attrs, over the corpus: where perf 6.1 reads the output and it has an
// EVENT_DESC, the two copies print the same.
TEST(EventDescCorpus, EveryAttrChangingVerbLeavesTheCopiesAgreeing) {
  size_t compared = 0;
  for (const CorpusFile& f : accepted_corpus_files()) {
    for (const std::string verb : {"unwind", "compat --for oldest", "fix --unwind"}) {
      const std::string out = temp_dir() + "/out.data";
      RunResult r = sh(pdfix() + " " + verb + " -q " + quote(f.path) + " " + quote(out));
      if (r.status != 0 || printed(out).attrs.empty()) continue;  // refused, or not for perf 6.1
      compared += expect_agree(out, verb + " " + f.name);
    }
  }
  EXPECT_GE(compared, 20u);
}

}  // namespace
}  // namespace pdfix::e2e
