// perf's build-id cache as evidence of which build a recording mapped at a path (its entries'
// add times, resolve/cache_adds.h), and what is no such evidence: an entry pdfix's own store made,
// a link that names another path's entry, an add after the file at the path changed.
#include "resolve/cache_adds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "fixture/fake_host.h"
#include "fixture/resolve_files.h"
#include "resolve/cache_layout.h"
#include "resolve/resolver.h"
#include "store/cache_store.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

// An entry for `path` in perf's build-id cache, as perf record adds one at `when` (seconds since
// the epoch): the directory and the id's .build-id link to it, made then.
void add_cache_entry(const std::string& cache, const std::string& path, const std::string& id,
                     int64_t when) {
  fs::create_directories(cache + path + "/" + id);
  const std::string link = cache + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
  fs::create_directories(cache + "/.build-id/" + id.substr(0, 2));
  ASSERT_EQ(symlink(("../.." + path + "/" + id).c_str(), link.c_str()), 0) << link;
  const std::array<struct timespec, 2> times{{{when, 0}, {when, 0}}};
  ASSERT_EQ(utimensat(AT_FDCWD, link.c_str(), times.data(), AT_SYMLINK_NOFOLLOW), 0);
}

int64_t now_seconds() { return static_cast<int64_t>(std::time(nullptr)); }

// A recording of this host and boot, made from `from` to `to` (seconds since the epoch).
Recording made_between(const testing::FakeHost& host, int64_t from, int64_t to) {
  Recording rec = this_boot(host);
  rec.started_at = from * kSecond;
  rec.ended_at = to * kSecond;
  return rec;
}

TEST_F(ResolveFiles, ACacheEntryCountsOnlyWhenAddedWhileRecording) {
  const testing::FakeHost host;
  const Recording rec = made_between(host, 1'700'000'000, 1'700'000'100);
  const std::string cache = dir_ + "/cache";
  const std::string v1(40, 'a');
  const std::string v2(40, 'b');
  // Version 1 was added by hand long before; the recording mapped version 2, since deleted.
  add_cache_entry(cache, "/opt/app/server", v1, 1'600'000'000);
  Resolver before({.buildid_dir = cache}, host);
  const Resolution& old = before.resolve(user_map("/opt/app/server"), rec.view());
  EXPECT_FALSE(old.id.has_value()) << old.id->hex();
  EXPECT_NE(old.reason.find("not proven"), std::string::npos) << old.reason;

  // perf record added version 2 as the recording ended: that is the file that was mapped.
  add_cache_entry(cache, "/opt/app/server", v2, 1'700'000'099);
  Resolver during({.buildid_dir = cache}, host);
  const Resolution& mapped = during.resolve(user_map("/opt/app/server"), rec.view());
  ASSERT_TRUE(mapped.id.has_value()) << mapped.reason;
  EXPECT_EQ(hex_of(mapped.id), v2);
  EXPECT_EQ(mapped.source, "build-id cache, added while recording");

  // An entry added after the recording ended (a later build, cached by a later perf record) is
  // not the file that was mapped.
  const std::string late_cache = dir_ + "/late-cache";
  add_cache_entry(late_cache, "/opt/app/server", v1, 1'700'000'200);
  Resolver late({.buildid_dir = late_cache}, host);
  const Resolution& after = late.resolve(user_map("/opt/app/server"), rec.view());
  EXPECT_FALSE(after.id.has_value()) << after.id->hex();
  EXPECT_NE(after.reason.find("not proven"), std::string::npos) << after.reason;

  // Not for a recording of another host, nor one whose span is unknown (a pipe).
  Recording elsewhere = rec;
  elsewhere.hostname = "another";
  Resolver other({.buildid_dir = cache}, host);
  EXPECT_FALSE(other.resolve(user_map("/opt/app/server"), elsewhere.view()).id.has_value());
  // Nor for one of a host of the same name under another kernel: a hostname proves nothing.
  Recording namesake = rec;
  namesake.osrelease = "6.12.0-other";
  Resolver same_name({.buildid_dir = cache}, host);
  EXPECT_FALSE(same_name.resolve(user_map("/opt/app/server"), namesake.view()).id.has_value());
  Recording piped = rec;
  piped.started_at.reset();
  Resolver pipe({.buildid_dir = cache}, host);
  EXPECT_FALSE(pipe.resolve(user_map("/opt/app/server"), piped.view()).id.has_value());

  // Two ids added while recording: which was mapped cannot be told.
  add_cache_entry(cache, "/opt/app/server", std::string(40, 'c'), 1'700'000'050);
  Resolver two({.buildid_dir = cache}, host);
  EXPECT_FALSE(two.resolve(user_map("/opt/app/server"), rec.view()).id.has_value());
}

TEST_F(ResolveFiles, AStaleFileGivesWayToTheIdTheCacheProves) {
  const testing::FakeHost host;
  const MapQuery q = user_map(dir_ + "/prog", true);
  // The file was replaced after the recording (a package upgrade): another inode, older mtime.
  fs::copy_file(dir_ + "/prog", dir_ + "/prog.new");
  fs::rename(dir_ + "/prog.new", dir_ + "/prog");
  struct stat st{};
  ASSERT_EQ(stat((dir_ + "/prog").c_str(), &st), 0);
  const Recording rec = made_between(host, st.st_mtim.tv_sec + 100, st.st_mtim.tv_sec + 200);
  const std::string cache = dir_ + "/cache";
  const std::string had(40, 'd');
  add_cache_entry(cache, dir_ + "/prog", had, st.st_mtim.tv_sec + 150);
  Resolver r({.buildid_dir = cache}, host);
  const Resolution& res = r.resolve(q, rec.view());
  ASSERT_TRUE(res.id.has_value()) << res.reason;
  EXPECT_EQ(hex_of(res.id), had);
  // Without the cache the stale file is refused, and says why.
  Resolver none({}, host);
  EXPECT_NE(none.resolve(q, rec.view()).reason.find("another file than this host's at that path"),
            std::string::npos);
}

TEST_F(ResolveFiles, AnEntryPdfixStoredWhileRecordingIsNoAddByPerf) {
  // follow stores an earlier chunk's binaries while perf writes the next chunk: that entry is
  // made in the next chunk's span, and is not perf's reading of the path for it.
  const testing::FakeHost host;
  const Recording rec = made_between(host, now_seconds() - 50, now_seconds() + 50);
  const std::string cache = dir_ + "/cache";
  const std::string path = "/opt/app/server";
  const auto id = format::BuildId::from_hex(expected_);
  ASSERT_TRUE(id.has_value());
  const std::optional<CacheEntry> entry = cache_entry(path, *id, EntryKind::kElf);
  ASSERT_TRUE(entry.has_value());
  const std::string bytes = "not read here";
  ASSERT_TRUE(store::store_in_cache(cache, *entry,
                                    {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()})
                  .ok());
  const std::vector<CacheAdd> adds = cache_adds(cache, path);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_FALSE(adds.front().added_at.has_value());
  Resolver r({.buildid_dir = cache}, host);
  const Resolution& res = r.resolve(user_map(path), rec.view());
  EXPECT_FALSE(res.id.has_value()) << res.id->hex();
  EXPECT_NE(res.reason.find("not proven"), std::string::npos) << res.reason;
}

TEST_F(ResolveFiles, ALinkThatNamesAnotherPathsEntryIsNoAddForThisOne) {
  const testing::FakeHost host;
  const Recording rec = made_between(host, 1'700'000'000, 1'700'000'100);
  const std::string cache = dir_ + "/cache";
  const std::string id(40, 'e');
  // perf added the id for /opt/a while recording; /opt/b's entry of the same id has no link.
  add_cache_entry(cache, "/opt/a", id, 1'700'000'050);
  fs::create_directories(cache + "/opt/b/" + id);
  Resolver r({.buildid_dir = cache}, host);
  EXPECT_EQ(hex_of(r.resolve(user_map("/opt/a"), rec.view()).id), id);
  const Resolution& b = r.resolve(user_map("/opt/b"), rec.view());
  EXPECT_FALSE(b.id.has_value()) << b.id->hex();
}

TEST_F(ResolveFiles, AFileRewrittenAtThePathWhileRecordingTakesNoCachedId) {
  // A linker rewrote the program in place between two runs: one inode, two builds. perf added
  // the one it read at the path as the recording ended, the later build, which the first run's
  // maps did not have.
  const testing::FakeHost host;
  const MapQuery q = user_map(dir_ + "/prog", true);
  std::ofstream(dir_ + "/prog", std::ios::app) << "rebuilt";
  struct stat st{};
  ASSERT_EQ(stat((dir_ + "/prog").c_str(), &st), 0);
  const int64_t changed = st.st_ctim.tv_sec;
  const std::string cache = dir_ + "/cache";
  const std::string later(40, 'f');
  add_cache_entry(cache, dir_ + "/prog", later, changed + 10);
  const Recording rec = made_between(host, changed - 50, changed + 50);
  Resolver during({.buildid_dir = cache}, host);
  const Resolution& res = during.resolve(q, rec.view());
  EXPECT_FALSE(res.id.has_value()) << res.id->hex();

  // Rewritten after the recording ended, the file perf added as it ended is the one mapped.
  const std::string earlier_cache = dir_ + "/earlier-cache";
  add_cache_entry(earlier_cache, dir_ + "/prog", later, changed - 60);
  const Recording before = made_between(host, changed - 100, changed - 50);
  Resolver after({.buildid_dir = earlier_cache}, host);
  const Resolution& proven = after.resolve(q, before.view());
  ASSERT_TRUE(proven.id.has_value()) << proven.reason;
  EXPECT_EQ(hex_of(proven.id), later);
  EXPECT_EQ(proven.source, "build-id cache, added while recording");
}

TEST_F(ResolveFiles, TheHostsOtherFilesIdInTheCacheIsNoProofForAMapOfAnotherInode) {
  // A chroot's program at the host's path: perf read the host's file there and cached its id
  // (copied, on another file system than its cache, so the host's file kept its time).
  const testing::FakeHost host;
  MapQuery q = user_map(dir_ + "/prog", true);
  q.ino += 1;
  struct stat st{};
  ASSERT_EQ(stat((dir_ + "/prog").c_str(), &st), 0);
  const Recording rec = made_between(host, st.st_ctim.tv_sec + 50, st.st_ctim.tv_sec + 150);
  const std::string cache = dir_ + "/cache";
  add_cache_entry(cache, dir_ + "/prog", expected_, st.st_ctim.tv_sec + 100);
  Resolver r({.buildid_dir = cache}, host);
  const Resolution& res = r.resolve(q, rec.view());
  EXPECT_FALSE(res.id.has_value()) << res.id->hex();
  EXPECT_NE(res.reason.find("may be another file's at that path"), std::string::npos) << res.reason;
}

}  // namespace
}  // namespace pdfix::resolve
