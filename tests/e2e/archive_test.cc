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

llvm::json::Object parse_object(const std::string& text) {
  auto v = llvm::json::parse(text);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError()) << "\n" << text;
    return {};
  }
  if (auto* o = v->getAsObject()) return std::move(*o);
  ADD_FAILURE() << "not a JSON object: " << text;
  return {};
}

int64_t int_of(const llvm::json::Object& o, llvm::StringRef key) {
  auto v = o.getInteger(key);
  EXPECT_TRUE(v.has_value()) << key.str();
  return v.value_or(-1);
}

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
  EXPECT_EQ(r.out, "perf --buildid-dir " + dir_ + "/u/.debug report -i " + dir_ + "/u/perf.data\n");
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
  EXPECT_TRUE(r.out.find(none + "stale (modified after the recording)") != std::string::npos ||
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
  RunResult port =
      sh("python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); "
         "print(s.getsockname()[1])'");
  ASSERT_EQ(port.status, 0) << port.err;
  const std::string url = "http://127.0.0.1:" + port.out.substr(0, port.out.find('\n'));
  RunResult server =
      sh("debuginfod -d " + quote(dir_ + "/db.sqlite") + " -p " + url.substr(url.rfind(':') + 1) +
         " -Z .tar.zst=zstdcat " + quote(dir_ + "/bundles") + " > " + quote(dir_ + "/server.log") +
         " 2>&1 & echo $!");
  ASSERT_EQ(server.status, 0) << server.err;
  const std::string pid = server.out.substr(0, server.out.find('\n'));
  const std::string client = "DEBUGINFOD_CACHE_PATH=" + quote(dir_ + "/client") + " ";
  // Ready once the scan has indexed the bundle. The client remembers a miss for ten minutes: each
  // probe gets a cache of its own.
  const std::string probe = quote(dir_ + "/probe");
  RunResult ready =
      sh("for i in $(seq 120); do rm -rf " + probe + "; DEBUGINFOD_CACHE_PATH=" + probe +
         " DEBUGINFOD_URLS=" + url + " debuginfod-find executable " + lib_id +
         " >/dev/null 2>&1 && exit 0; sleep 0.5; done; exit 1");
  rebuild();
  const std::string cache = dir_ + "/cache";
  RunResult r = sh(env_ + client + pdfix() + " fetch --json --buildid-dir " + quote(cache) +
                   " --debuginfod " + url + " " + quote(fixed()));
  // Gone before TearDown removes its database: a server still writing its WAL races the removal.
  sh("kill " + pid + "; for i in $(seq 100); do kill -0 " + pid +
     " 2>/dev/null || exit 0; sleep 0.1; done");
  ASSERT_EQ(ready.status, 0) << "debuginfod never served the bundle's library";
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

// From here on, no recording of this machine is needed.

std::string foreign(const std::string& name) {
  return std::string(PDFIX_FOREIGN_CORPUS) + "/" + name;
}

TEST(ArchiveInput, ForeignRecordingListsEveryIdMissing) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  RunResult r = sh(pdfix() + " archive --json " + quote(in) + " " + quote(dir + "/b.tar.zst"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = parse_object(r.out);
  EXPECT_EQ(int_of(summary, "kept"), 0);
  // perf's own list of the recording's ids, each one missing.
  RunResult perf = sh("perf buildid-list -i " + quote(in) + " | cut -c1-40 | sort -u");
  ASSERT_EQ(perf.status, 0) << perf.err;
  std::string listed;
  const auto* rows = summary.getArray("binaries");
  ASSERT_NE(rows, nullptr);
  std::vector<std::string> ids;
  for (const auto& row : *rows) {
    const auto* o = row.getAsObject();
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(o->getString("missing").has_value());
    ids.push_back(o->getString("build_id")->str());
  }
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) listed += id + "\n";
  EXPECT_EQ(listed, perf.out);
  EXPECT_EQ(int_of(summary, "missing"), static_cast<int64_t>(ids.size()));
  EXPECT_GE(ids.size(), 10U);
  r = sh("tar --zstd -tf " + quote(dir + "/b.tar.zst"));
  EXPECT_EQ(r.out, "perf.data\n");
  r = sh("tar --zstd -xOf " + quote(dir + "/b.tar.zst") + " perf.data | cmp - " + quote(in));
  EXPECT_EQ(r.status, 0) << r.out;
  fs::remove_all(dir);
}

// Nothing in `dir` but what the test put there: no output, no temporary.
void expect_only(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) found.push_back(e.path().filename());
  std::sort(found.begin(), found.end());
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(found, want);
}

TEST(ArchiveInput, UnreadableRecordingLeavesNoBundle) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/junk.data") << "this is not a perf.data file, not at all\n";
  for (const std::string& in : {dir + "/junk.data", dir + "/absent.data"}) {
    RunResult r = sh(pdfix() + " archive " + quote(in) + " " + quote(dir + "/b.tar.zst"));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("pdfix: "), std::string::npos) << r.err;
    expect_only(dir, {"junk.data"});
  }
  fs::remove_all(dir);
}

TEST(UnpackInput, WhatIsNotABundleIsRefused) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  std::ofstream(dir + "/empty.tar");
  // A tar without perf.data.
  sh("cd " + quote(dir) +
     " && mkdir -p .debug && echo x > .debug/f && tar -cf other.tar .debug && rm -r .debug");
  for (const std::string& bundle : {in, dir + "/empty.tar", dir + "/other.tar"}) {
    RunResult r = sh(pdfix() + " unpack " + quote(bundle) + " " + quote(dir + "/u"));
    EXPECT_EQ(r.status, 2) << bundle;
    EXPECT_NE(r.err.find("not a pdfix bundle"), std::string::npos) << r.err;
    expect_only(dir, {"empty.tar", "other.tar"});
  }
  // A directory with something in it is not overwritten.
  fs::create_directories(dir + "/full");
  std::ofstream(dir + "/full/keep") << "mine";
  sh("cd " + quote(dir) + " && cp " + quote(in) +
     " perf.data && tar -cf ok.tar perf.data && rm perf.data");
  RunResult r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/full"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not an empty directory"), std::string::npos) << r.err;
  expect_only(dir + "/full", {"keep"});
  // An empty one is filled.
  fs::create_directories(dir + "/empty");
  r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/empty"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(dir + "/empty/perf.data", in));
  // A DIR whose parent is reached through a symbolic link (libarchive's guard must not mind).
  fs::create_symlink(dir + "/empty", dir + "/via");
  r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/via/new"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(dir + "/empty/new/perf.data", in));
  fs::remove_all(dir);
}

// Hostile tars, made with Python's tarfile: every entry that would land outside DIR is refused
// and nothing is written, there or anywhere.
TEST(UnpackInput, NeverWritesOutsideDir) {
  const std::string dir = temp_dir();
  const std::string make = R"PY(
import io, sys, tarfile
out, case = sys.argv[1], sys.argv[2]
def add(t, name, data=b"x", kind=tarfile.REGTYPE, link=""):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
with tarfile.open(out, "w") as t:
    add(t, "perf.data")
    if case == "dotdot": add(t, ".debug/../../escaped")
    if case == "absolute": add(t, sys.argv[3] + "/escaped")
    if case == "link-out":
        add(t, ".debug/l", kind=tarfile.SYMTYPE, link="../../..")
    if case == "abs-link":
        add(t, ".debug/l", kind=tarfile.SYMTYPE, link=sys.argv[3])
    if case == "through-link":
        add(t, ".debug/d", kind=tarfile.SYMTYPE, link=".")
        add(t, ".debug/d/f")
    if case == "hardlink": add(t, ".debug/h", kind=tarfile.LNKTYPE, link="/etc/passwd")
    if case == "device": add(t, ".debug/dev", kind=tarfile.CHRTYPE)
    if case == "other-top": add(t, "elsewhere/file")
)PY";
  std::ofstream(dir + "/make.py") << make;
  fs::create_directories(dir + "/outside");
  for (const std::string c : {"dotdot", "absolute", "link-out", "abs-link", "hardlink", "device",
                              "other-top", "through-link"}) {
    const std::string bundle = dir + "/" + c + ".tar";
    RunResult r = sh("python3 " + quote(dir + "/make.py") + " " + quote(bundle) + " " + c + " " +
                     quote(dir + "/outside"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh(pdfix() + " unpack " + quote(bundle) + " " + quote(dir + "/in/u"));
    EXPECT_EQ(r.status, 2) << c << ": " << r.err;
    // libarchive's own guard refuses writing through a link that stays inside.
    EXPECT_NE(r.err.find(c == "through-link" ? "cannot unpack" : "not a pdfix bundle"),
              std::string::npos)
        << c << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir + "/in/u")) << c;
    EXPECT_TRUE(fs::is_empty(dir + "/outside")) << c;
    EXPECT_FALSE(fs::exists(dir + "/escaped")) << c;
    if (fs::exists(dir + "/in")) expect_only(dir + "/in", {});
  }
  fs::remove_all(dir);
}

// Each row's outcome, and the set of them.
std::set<std::string> outcomes(const llvm::json::Object& result) {
  std::set<std::string> out;
  if (const auto* rows = result.getArray("binaries")) {
    for (const auto& row : *rows) out.insert(row.getAsObject()->getString("outcome")->str());
  }
  return out;
}

// A server on 127.0.0.1 that answers every request with `code`, stopped with the test.
class StubServer {
 public:
  explicit StubServer(int code) {
    RunResult r =
        sh("python3 -c '\n"
           "import http.server, sys\n"
           "class H(http.server.BaseHTTPRequestHandler):\n"
           "    def do_GET(self):\n"
           "        self.send_response(" +
           std::to_string(code) +
           "); self.end_headers()\n"
           "    def log_message(self, *a): pass\n"
           "s = http.server.HTTPServer((\"127.0.0.1\", 0), H)\n"
           "print(s.server_address[1], flush=True)\n"
           "s.serve_forever()' > " +
           quote(port_file_) + " 2>&1 & echo $!; for i in $(seq 100); do [ -s " +
           quote(port_file_) + " ] && exit 0; sleep 0.05; done; exit 1");
    EXPECT_EQ(r.status, 0) << r.err;
    pid_ = r.out.substr(0, r.out.find('\n'));
    std::ifstream f(port_file_);
    std::string port;
    f >> port;
    url = "http://127.0.0.1:" + port;
  }
  ~StubServer() {
    sh("kill " + pid_);
    fs::remove(port_file_);
  }
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;
  std::string url;

 private:
  std::string port_file_ = temp_dir() + "/port";
  std::string pid_;
};

// What fetch says and its exit status tell "the servers do not have it" from "no server could be
// asked" (refused, HTTP 5xx) and from "libdebuginfod remembered a miss and asked nobody".
TEST(FetchInput, ServersThatAreDownOrAbsent) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  const std::string cache = quote(dir + "/c");
  // No server at all is a usage error.
  RunResult r =
      sh("env -u DEBUGINFOD_URLS " + pdfix() + " fetch --buildid-dir " + cache + " " + quote(in));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("DEBUGINFOD_URLS"), std::string::npos) << r.err;
  auto fetch = [&](const std::string& client, const std::string& urls, const std::string& flags) {
    return sh("DEBUGINFOD_CACHE_PATH=" + quote(dir + "/" + client) + " " + pdfix() + " fetch " +
              flags + " --buildid-dir " + cache + " --debuginfod " + quote(urls) + " " + quote(in));
  };
  // Nothing listens: no server could be asked, which is no fetch done.
  r = fetch("refused", "http://127.0.0.1:9", "--json");
  EXPECT_EQ(r.status, 2) << r.err;
  auto result = parse_object(r.out);
  EXPECT_GE(result.getArray("binaries")->size(), 10U);
  EXPECT_EQ(outcomes(result), std::set<std::string>{"unreachable"}) << r.out;
  r = fetch("refused", "http://127.0.0.1:9", "");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("0 missing, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no server could be asked"), std::string::npos) << r.err;
  {
    // A server in trouble (HTTP 503): libdebuginfod says "not found", but it was not asked.
    StubServer down(503);
    r = fetch("503", down.url, "--json");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"unreachable"}) << r.out;
    EXPECT_NE(r.out.find("HTTP 503"), std::string::npos) << r.out;
  }
  {
    // A server that answers that it has none: done, and every id is missing; --strict says so in
    // the status.
    StubServer empty(404);
    r = fetch("404", empty.url, "--json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"missing"}) << r.out;
    r = fetch("404-strict", empty.url, "--strict");
    EXPECT_EQ(r.status, 3) << r.err;
    // A server down now and a server that answers: the answer counts.
    r = fetch("both", "http://127.0.0.1:9 " + empty.url, "--json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"missing"}) << r.out;
  }
  // The 404 server gone, libdebuginfod answers from its memory of the misses: nobody was asked,
  // and the summary says so.
  r = fetch("404", "http://127.0.0.1:9", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("remembers an earlier miss in its client cache; no server was asked"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir + "/c/.build-id"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pdfix::e2e
