// A recording whose perf record was SIGKILLed: perf 6.1 cannot read it, pdfix fix writes its whole
// records under a finished header, which perf and hotspot's perfparser read; a record cut short at
// the end is dropped and said. The oracle for what the records are is `pdfix info` of the input
// (its record counts), and for what a reader makes of the output perf script's samples.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

int64_t samples_of_info(const std::string& path) {
  RunResult r = sh(pdfix() + " info --json " + quote(path));
  EXPECT_EQ(r.status, 0) << r.err;
  const llvm::json::Object info = parse_object(r.out);
  const llvm::json::Object* counts = info.getObject("record_counts");
  return counts == nullptr ? -1 : counts->getInteger("SAMPLE").value_or(0);
}

TEST(Unfinished, ARecordingWhosePerfWasKilledIsWrittenWholeAsFarAsItsRecordsGo) {
  PDFIX_NEEDS_PERF_RECORD();
  const std::string dir = temp_dir();
  const std::string killed = dir + "/killed.data";
  // Small ring buffers (-m 8 pages), so that perf has written samples before it is killed.
  RunResult r =
      sh("cd " + quote(dir) +
         " && (perf record -q -g -F 2000 -m 8 -o killed.data -- timeout 4 sh -c 'while :; "
         "do ls -R /usr/lib >/dev/null; done' & p=$!; sleep 2; kill -KILL $p; wait $p; "
         "true)");
  ASSERT_EQ(r.status, 0) << r.err;
  const int64_t samples = samples_of_info(killed);
  ASSERT_GT(samples, 100);
  // perf reads not one sample of it.
  EXPECT_EQ(sh("perf script -G -F ip -i " + quote(killed) + " 2>/dev/null | grep -c .").out, "0\n");

  // Whole, and a record cut 37 bytes short of its end.
  const std::string cut = dir + "/cut.data";
  const uint64_t size = fs::file_size(killed);
  ASSERT_EQ(
      sh("head -c " + std::to_string(size - 37) + " " + quote(killed) + " > " + quote(cut)).status,
      0);
  for (const std::string& in : {killed, cut}) {
    SCOPED_TRACE(in);
    RunResult info = sh(pdfix() + " info --json " + quote(in));
    const llvm::json::Object i = parse_object(info.out);
    EXPECT_EQ(i.getBoolean("unfinished"), std::optional<bool>(true));
    const int64_t lost = int_of(i, "cut_bytes");
    EXPECT_TRUE(in != cut || lost > 0) << lost;
    const std::string out = in + ".fixed";
    RunResult fix = sh(pdfix() + " fix " + quote(in) + " " + quote(out));
    EXPECT_EQ(fix.status, 3) << "done, not all there: " << fix.err;
    EXPECT_NE(fix.err.find("perf record was killed or crashed"), std::string::npos) << fix.err;
    // Every whole sample of the input, read by perf and by hotspot's perfparser.
    const int64_t kept = samples_of_info(out);
    EXPECT_EQ(kept, samples_of_info(in));
    EXPECT_GE(kept, in == cut ? samples - 1 : samples);
    EXPECT_EQ(sh("perf script -G -F ip -i " + quote(out) + " 2>/dev/null | grep -c .").out,
              std::to_string(kept) + "\n");
    const auto stats = hotspot_stats(out);
    ASSERT_FALSE(stats.empty()) << "hotspot-perfparser read nothing of " << out;
    EXPECT_EQ(stats.at("samples"), static_cast<uint64_t>(kept));
    // The output is a finished file: read again, nothing is unfinished.
    EXPECT_EQ(parse_object(sh(pdfix() + " info --json " + quote(out)).out).getBoolean("unfinished"),
              std::optional<bool>(false));
  }
  // copy writes it as perf should have ended it, and says so; archive would bundle what perf
  // cannot read, and refuses.
  RunResult copy = sh(pdfix() + " copy " + quote(killed) + " " + quote(dir + "/copy.data"));
  EXPECT_EQ(copy.status, 3) << copy.err;
  EXPECT_EQ(samples_of_info(dir + "/copy.data"), samples);
  RunResult archive = sh(pdfix() + " archive " + quote(killed) + " " + quote(dir + "/b.tar.zst"));
  EXPECT_EQ(archive.status, 2);
  EXPECT_NE(archive.err.find("run pdfix fix on it first"), std::string::npos) << archive.err;
  EXPECT_FALSE(fs::exists(dir + "/b.tar.zst"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pdfix::e2e
