// Keeping what the ids name: archive, unpack, store and fetch, judged by the machine's perf report
// after the binaries were rebuilt in place, by tar, and by elfutils' own debuginfod server.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Every name in a directory tree, with each symbolic link's target.
std::string tree(const std::string& root) {
  RunResult r = sh("cd " + quote(root) + " && find . -printf '%y %p %l\\n' | sort");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

// The seed's workflow: a program and its library, recorded with perf record -B -g, fixed by pdfix.
// Every perf and pdfix runs with an empty HOME, so no build-id cache helps unless the test gives
// one.
class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    fs::create_directories(dir_ + "/home");
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
    build_app(dir_ + "/app", "1");
    RunResult r = sh(env_ + "perf record -q -B -g -o " + quote(dir_ + "/in.data") + " -- " +
                     quote(dir_ + "/app/app"));
    ASSERT_EQ(r.status, 0) << r.err;
    reference_ = report(dir_ + "/in.data", "");
    // What makes the comparison able to fail: the functions of both binaries are named.
    ASSERT_NE(reference_.find("spin_v1"), std::string::npos) << reference_;
    ASSERT_NE(reference_.find("libwork.so"), std::string::npos) << reference_;
    ASSERT_NE(reference_.find("[.] work"), std::string::npos) << reference_;
    r = sh(env_ + pdfix() + " fix " + quote(dir_ + "/in.data") + " " + quote(fixed()));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string fixed() const { return dir_ + "/fixed.data"; }

  // perf report by DSO and symbol, with `cache` as the build-id cache when one is given.
  std::string report(const std::string& path, const std::string& cache) const {
    RunResult r = sh(env_ + "perf " + (cache.empty() ? "" : "--buildid-dir " + quote(cache) + " ") +
                     "report -i " + quote(path) + " --stdio --sort dso,sym -g none 2>/dev/null" +
                     " | grep -v '^#' | grep -v '^$'");
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }

  // The binaries replaced in place by others (new code, new build-ids), as by an upgrade; the
  // control shows perf now misreports the recording.
  void rebuild() {
    build_app(dir_ + "/app", "2");
    const std::string after = report(fixed(), "");
    EXPECT_NE(after, reference_);
    EXPECT_EQ(after.find("spin_v1"), std::string::npos) << after;
  }

  std::string archive(const std::string& bundle) {
    RunResult r = sh(env_ + pdfix() + " archive " + quote(fixed()) + " " + quote(bundle));
    EXPECT_EQ(r.status, 0) << r.err;
    return r.err;
  }

  std::string dir_;
  std::string env_;
  std::string reference_;
};

TEST_F(ArchiveTest, UnpackedBundleReportsAsBeforeTheRebuild) {
  const std::string bundle = dir_ + "/rec.tar.zst";
  archive(bundle);
  EXPECT_EQ(fs::status(bundle).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  rebuild();
  RunResult r = sh(env_ + pdfix() + " unpack " + quote(bundle) + " " + quote(dir_ + "/u"));
  ASSERT_EQ(r.status, 0) << r.err;
  // The one command it prints is the one that reports the recording.
  EXPECT_EQ(r.out, "perf --buildid-dir " + dir_ + "/u/.debug report -i " + dir_ +
                       "/u/perf.data\nhotspot-perfparser --input " + dir_ +
                       "/u/perf.data --debug " + dir_ + "/u/.debug\n");
  EXPECT_EQ(report(dir_ + "/u/perf.data", dir_ + "/u/.debug"), reference_);
  EXPECT_TRUE(same_file(dir_ + "/u/perf.data", fixed()));
  // tar alone gives the same tree.
  fs::create_directories(dir_ + "/t");
  r = sh("tar --zstd -xf " + quote(bundle) + " -C " + quote(dir_ + "/t"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tree(dir_ + "/u"), tree(dir_ + "/t"));
  r = sh("diff -r " + quote(dir_ + "/u") + " " + quote(dir_ + "/t"));
  EXPECT_EQ(r.status, 0) << r.out;
  // Through a pipe: '-' for the bundle on both sides. The binaries now on disk are not the ones
  // mapped, so only those unchanged are there: fewer, and the same as in the first bundle.
  r = sh("set -o pipefail; " + env_ + pdfix() + " archive " + quote(fixed()) + " - | " + pdfix() +
         " unpack - " + quote(dir_ + "/p"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(dir_ + "/p/perf.data", fixed()));
  EXPECT_EQ(report(dir_ + "/p/perf.data", dir_ + "/p/.debug"), report(fixed(), ""));
}

// The exit status says whether the job was done, on a real perf record -B recording: check says
// fix has work (1), then that it is ready (0), then, once the binaries changed before fix ran,
// that something stays unanalysable (3); archive of the raw recording bundles nothing that
// resolves, says so with each file's share of the samples, and exits 3.
TEST_F(ArchiveTest, StatusesSayWhetherTheRecordingCanBeAnalysed) {
  const std::string raw = dir_ + "/in.data";
  RunResult r = sh(env_ + pdfix() + " check " + quote(raw));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("not ready to archive; pdfix fix repairs what was found"), std::string::npos)
      << r.out;
  r = sh(env_ + pdfix() + " check " + quote(fixed()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("ready to archive"), std::string::npos) << r.out;

  r = sh(env_ + pdfix() + " archive " + quote(raw) + " " + quote(dir_ + "/raw.tar.zst"));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("run pdfix fix first (or pdfix fix --archive)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0 binaries in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("100.0% of"), std::string::npos) << r.err;
  // (The kernel too, when a sample fell in it: a short run need not have one.)
  for (const char* name : {"/app: no record", "/libwork.so: no record"}) {
    EXPECT_NE(r.err.find(name), std::string::npos) << name << "\n" << r.err;
  }
  EXPECT_TRUE(fs::exists(dir_ + "/raw.tar.zst"));  // written, for what it is worth
  r = sh(env_ + pdfix() + " archive --json " + quote(raw) + " " + quote(dir_ + "/raw2.tar.zst"));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NEAR(parse_object(r.out).getNumber("unresolved_share").value_or(0), 100.0, 0.01) << r.out;

  // The binaries replaced before fix ran: fix proves no id for them, and check says so.
  build_app(dir_ + "/app", "2");
  r = sh(env_ + pdfix() + " check " + quote(raw));
  EXPECT_EQ(r.status, 3) << r.out;
  // The linker writes a new file: the same inode number again (stale) or another (replaced), as
  // the file system hands them out.
  const std::string none =
      "libwork.so: samples hit maps of it that carry no build-id, and fix "
      "proves none: ";
  EXPECT_TRUE(r.out.find(none + "stale (modified after the recording began)") !=
                  std::string::npos ||
              r.out.find(none + "replaced (this host's file at that path is a new inode") !=
                  std::string::npos)
      << r.out;
  r = sh(env_ + pdfix() + " fix --archive " + quote(dir_ + "/late.tar.zst") + " " + quote(raw) +
         " " + quote(dir_ + "/late.data"));
  EXPECT_EQ(r.status, 0) << r.err;  // done: what could be kept was, and the rest is named
  EXPECT_NE(r.err.find("2 binaries that samples hit will not resolve"), std::string::npos) << r.err;
  r = sh(env_ + pdfix() + " fix --strict --archive " + quote(dir_ + "/late2.tar.zst") + " " +
         quote(raw) + " " + quote(dir_ + "/late2.data"));
  EXPECT_EQ(r.status, 3) << r.err;
  // fix's output keeps the recording's end time: checked (or fixed) again after the binaries
  // changed, it still proves nothing about the new files.
  EXPECT_EQ(fs::last_write_time(dir_ + "/late.data"), fs::last_write_time(raw));
  r = sh(env_ + pdfix() + " check " + quote(dir_ + "/late.data"));
  EXPECT_EQ(r.status, 3) << r.out;
}

TEST_F(ArchiveTest, UnpackMergesIntoACache) {
  const std::string bundle = dir_ + "/rec.tar.zst";
  archive(bundle);
  rebuild();
  const std::string cache = dir_ + "/cache";
  RunResult r = sh(pdfix() + " unpack --json --buildid-dir " + quote(cache) + " " + quote(bundle) +
                   " " + quote(dir_ + "/u"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = parse_object(r.out);
  EXPECT_GE(int_of(summary, "added"), 2);
  EXPECT_EQ(int_of(summary, "added"), int_of(summary, "binaries"));
  EXPECT_FALSE(fs::exists(dir_ + "/u/.debug"));
  EXPECT_EQ(report(dir_ + "/u/perf.data", cache), reference_);
}

TEST_F(ArchiveTest, StoreFillsTheCachePerfReads) {
  const std::string cache = dir_ + "/cache";
  RunResult r =
      sh(env_ + pdfix() + " store --json --buildid-dir " + quote(cache) + " " + quote(fixed()));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto first = parse_object(r.out);
  EXPECT_GE(int_of(first, "added"), 3);  // at least the program, its library and the kernel
  // Again: everything is there already.
  r = sh(env_ + pdfix() + " store --json --buildid-dir " + quote(cache) + " " + quote(fixed()));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto second = parse_object(r.out);
  EXPECT_EQ(int_of(second, "added"), 0);
  EXPECT_EQ(int_of(second, "already_present"), int_of(first, "added"));
  // Two at once into a new cache: both succeed and the cache is whole.
  const std::string twice = dir_ + "/twice";
  r = sh(env_ + pdfix() + " store --buildid-dir " + quote(twice) + " " + quote(fixed()) +
         " & pid=$!; " + env_ + pdfix() + " store --buildid-dir " + quote(twice) + " " +
         quote(fixed()) + " && wait $pid");
  ASSERT_EQ(r.status, 0) << r.err;
  // $PERF_BUILDID_DIR is the default, as for perf.
  r = sh(env_ + "PERF_BUILDID_DIR=" + quote(dir_ + "/env") + " " + pdfix() + " store " +
         quote(fixed()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tree(dir_ + "/env"), tree(cache));
  rebuild();
  EXPECT_EQ(report(fixed(), cache), reference_);
  EXPECT_EQ(report(fixed(), twice), reference_);
  // After the rebuild the files on disk are not the ones mapped: nothing more is stored.
  r = sh(env_ + pdfix() + " store --json --buildid-dir " + quote(dir_ + "/late") + " " +
         quote(fixed()));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto late = parse_object(r.out);
  EXPECT_EQ(int_of(late, "missing"), 2);
  // Both are hit: each is named with its share of the samples, and --strict makes that exit 3.
  const auto* unresolved = late.getArray("unresolved");
  ASSERT_NE(unresolved, nullptr) << r.out;
  std::set<std::string> names;
  double share = 0;
  for (const auto& row : *unresolved) {
    names.insert(fs::path(row.getAsObject()->getString("name")->str()).filename());
    share += row.getAsObject()->getNumber("share").value_or(0);
  }
  EXPECT_EQ(names, (std::set<std::string>{"app", "libwork.so"})) << r.out;
  EXPECT_GT(share, 50.0) << r.out;  // the program spins in them
  EXPECT_NEAR(late.getNumber("unresolved_share").value_or(0), share, 0.01) << r.out;
  r = sh(env_ + pdfix() + " store --strict --buildid-dir " + quote(dir_ + "/late") + " " +
         quote(fixed()));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("2 binaries that samples hit will not resolve"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libwork.so: another file than this host's at that path"), std::string::npos)
      << r.err;
}

TEST_F(ArchiveTest, FixArchiveIsFixThenArchive) {
  const std::string bundle = dir_ + "/one.tar.zst";
  RunResult r = sh(env_ + pdfix() + " fix --json --archive " + quote(bundle) + " " +
                   quote(dir_ + "/in.data") + " " + quote(dir_ + "/out.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = parse_object(r.out);
  const auto* kept = summary.getObject("archive");
  ASSERT_NE(kept, nullptr) << r.err;
  EXPECT_EQ(int_of(*kept, "missing"), 0);
  EXPECT_TRUE(same_file(dir_ + "/out.data", fixed()));
  r = sh("tar --zstd -xOf " + quote(bundle) + " perf.data | cmp - " + quote(fixed()));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  rebuild();
  r = sh(pdfix() + " unpack " + quote(bundle) + " " + quote(dir_ + "/u"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(report(dir_ + "/u/perf.data", dir_ + "/u/.debug"), reference_);
}

TEST_F(ArchiveTest, BundleHoldsThisBootsKallsyms) {
  const std::string bundle = dir_ + "/rec.tar.zst";
  archive(bundle);
  const std::string kernel_id = sh("perf buildid-list -k").out.substr(0, 40);
  ASSERT_TRUE(std::regex_match(kernel_id, std::regex("[0-9a-f]{40}"))) << kernel_id;
  const std::string entry = ".debug/[kernel.kallsyms]/" + kernel_id + "/kallsyms";
  RunResult r =
      sh("tar --zstd -xOf " + quote(bundle) + " " + quote(entry) + " | cmp - /proc/kallsyms");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = sh("tar --zstd -tvf " + quote(bundle) + " " +
         quote(".debug/.build-id/" + kernel_id.substr(0, 2) + "/" + kernel_id.substr(2)));
  EXPECT_NE(r.out.find("-> ../../[kernel.kallsyms]/" + kernel_id), std::string::npos) << r.out;
}

// The analysis host's side: the bundle served by elfutils' debuginfod, scanning the directory
// that holds it, and pdfix fetch filling an empty cache from it.
TEST_F(ArchiveTest, FetchFromDebuginfodServingBundles) {
  fs::create_directories(dir_ + "/bundles");
  archive(dir_ + "/bundles/rec.tar.zst");
  const std::string lib_id =
      sh("readelf -n " + quote(dir_ + "/app/libwork.so") + " | sed -n 's/.*Build ID: //p'")
          .out.substr(0, 40);
  ASSERT_EQ(lib_id.size(), 40U);
  Debuginfod server(dir_, "-Z .tar.zst=zstdcat " + quote(dir_ + "/bundles"));
  const std::string& url = server.url();
  const std::string client = "DEBUGINFOD_CACHE_PATH=" + quote(dir_ + "/client") + " ";
  // Ready once the scan has indexed the bundle.
  const bool ready = server.serves("executable", lib_id, dir_ + "/served-lib");
  rebuild();
  const std::string cache = dir_ + "/cache";
  RunResult r = sh(env_ + client + pdfix() + " fetch --json --buildid-dir " + quote(cache) +
                   " --debuginfod " + url + " " + quote(fixed()));
  server.stop();
  ASSERT_TRUE(ready) << "debuginfod never served the bundle's library";
  ASSERT_EQ(r.status, 0) << r.err;
  const auto result = parse_object(r.out);
  const auto* counts = result.getObject("counts");
  ASSERT_NE(counts, nullptr) << r.out;
  EXPECT_GE(counts->getInteger("fetched").value_or(0), 2) << r.out;
  EXPECT_EQ(report(fixed(), cache), reference_);
  // Again: nothing to fetch.
  const std::string again = env_ + client + pdfix() + " fetch --buildid-dir " + quote(cache) +
                            " --debuginfod " + url + " " + quote(fixed());
  r = sh(again);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");  // the summary is stderr's
  EXPECT_NE(r.err.find(" 0 fetched"), std::string::npos) << r.err;
  // An empty build-id cache again, the server gone: libdebuginfod's own client cache still has
  // the files. They are stored, and said to come from there, not fetched.
  fs::remove_all(cache);
  r = sh(again);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 fetched, " + std::to_string(counts->getInteger("fetched").value_or(0)) +
                       " from libdebuginfod's cache"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(report(fixed(), cache), reference_);
}

}  // namespace
}  // namespace pdfix::e2e
