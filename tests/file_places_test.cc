// The places a map's file may be seen from here, in their one order, and the inode rule that
// judges a file found at each.
#include "resolve/file_places.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "gtest/gtest.h"
#include "resolve/cache_layout.h"
#include "resolve/elf_build_id.h"
#include "resolve/find_copy.h"

namespace pdfix::resolve {
namespace {

int64_t seconds_from_now(int64_t s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         s * 1'000'000'000;
}

TEST(FilePlaces, PathOverlayLayersProcessRootThenSearchRoots) {
  testing::FakeHost host;
  host.mounts[{0, 77}] = {
      .type = "overlay", .point = "/merged", .root = "/", .layers = {"/upper", "/lower"}};
  host.processes[42] = {.root = "/proc/42/root", .started_at = seconds_from_now(-60)};
  const std::vector<std::string> search = {"/rootfs", "/layer"};
  const auto got = places(host, {0, 77, 5}, 42, search, seconds_from_now(0));
  std::vector<std::pair<std::string, PlaceKind>> order;
  for (const Place& p : got) order.emplace_back(p.root, p.kind);
  const std::vector<std::pair<std::string, PlaceKind>> want = {
      {"", PlaceKind::kPath},
      {"/merged", PlaceKind::kOverlay},
      {"/upper", PlaceKind::kOverlayLayer},
      {"/lower", PlaceKind::kOverlayLayer},
      {"/proc/42/root", PlaceKind::kProcessRoot},
      {"/rootfs", PlaceKind::kSearch},
      {"/layer", PlaceKind::kSearch}};
  EXPECT_EQ(order, want);
  // A bind mount of part of an overlay shows no root; a process started since the recording ended
  // is another one under a reused pid.
  host.mounts[{0, 77}].root = "/some/dir";
  host.processes[42].started_at = seconds_from_now(60);
  const auto fewer = places(host, {0, 77, 5}, 42, {}, seconds_from_now(0));
  ASSERT_EQ(fewer.size(), 3u);
  EXPECT_EQ(fewer[1].kind, PlaceKind::kOverlayLayer);
  EXPECT_EQ(fewer[2].kind, PlaceKind::kOverlayLayer);
}

TEST(FilePlaces, AFileIsTheMappedOnlyWithItsInodeAndDevice) {
  const std::string path = testing::write_temp({1, 2, 3}, "mapped");
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const Inode mapped{major(st.st_dev), minor(st.st_dev), st.st_ino};
  testing::FakeHost host;
  const Place at_path{"", PlaceKind::kPath, "file"};
  EXPECT_EQ(match(host, path, at_path, mapped, std::nullopt, std::nullopt), Match::kTheMapped);
  EXPECT_EQ(match(host, path + ".none", at_path, mapped, std::nullopt, std::nullopt),
            Match::kMissing);
  Inode other_ino = mapped;
  other_ino.ino += 1;
  EXPECT_EQ(match(host, path, at_path, other_ino, std::nullopt, std::nullopt),
            Match::kAnotherInode);
  // The same number on another device, and a searched layer for a map of a real device.
  Inode other_dev = mapped;
  other_dev.min += 1;
  // A real device's number even where the temp file is on tmpfs (major 0, as an overlay's map
  // has, which a searched layer matches by inode alone): the arm64 VM's /tmp.
  if (other_dev.maj == 0) other_dev.maj = 8;
  EXPECT_EQ(match(host, path, at_path, other_dev, std::nullopt, std::nullopt),
            Match::kAnotherInode);
  const Place searched{"", PlaceKind::kSearch, "--search /"};
  EXPECT_EQ(match(host, path, searched, other_dev, std::nullopt, std::nullopt),
            Match::kAnotherInode);
  // Written after the recording ended.
  EXPECT_EQ(match(host, path, at_path, mapped, std::nullopt, seconds_from_now(-3600)),
            Match::kStale);
  // Written while it was being made (rewritten in place, as ld does): the inode is the mapped
  // one, but what a process mapped before may have been other bytes.
  EXPECT_EQ(match(host, path, at_path, mapped, seconds_from_now(-3600), seconds_from_now(3600)),
            Match::kStale);
  EXPECT_EQ(match(host, path, at_path, std::nullopt, seconds_from_now(-3600), std::nullopt),
            Match::kStale);
  EXPECT_EQ(match(host, path, at_path, mapped, seconds_from_now(60), seconds_from_now(3600)),
            Match::kTheMapped);
  // An MMAP record gives no inode: a file is there, unchanged or not, and nothing more is known.
  EXPECT_EQ(match(host, path, at_path, std::nullopt, std::nullopt, seconds_from_now(3600)),
            Match::kNoInode);
  EXPECT_EQ(match(host, path, at_path, std::nullopt, std::nullopt, seconds_from_now(-3600)),
            Match::kStale);
  EXPECT_EQ(match(host, path + ".none", at_path, std::nullopt, std::nullopt, std::nullopt),
            Match::kMissing);
  // What tells a replaced file from a chroot's: another inode on the map's own device.
  const Sighting replaced = match(host, path, at_path, other_ino, std::nullopt, std::nullopt);
  EXPECT_TRUE(replaced.same_device);
  EXPECT_EQ(replaced.changed_at, st.st_ctim.tv_sec * int64_t{1'000'000'000} + st.st_ctim.tv_nsec);
  EXPECT_FALSE(match(host, path, at_path, other_dev, std::nullopt, std::nullopt).same_device);
}

// A binary's copy by its build-id: each place in its order, another file with another id passed
// over, a reused pid's root left out.
TEST(FindCopy, EachPlaceInOrderByTheFilesOwnBuildId) {
  namespace fs = std::filesystem;
  const std::string dir = testing::write_temp({}, "find-copy");
  const std::string root = fs::path(dir).parent_path().string();
  const std::string name = "/opt/find-copy/prog";
  auto id = build_id_of_file("/usr/bin/true");
  ASSERT_TRUE(id.ok() && id->has_value());
  const auto put = [&](const std::string& at, const char* from = "/usr/bin/true") {
    fs::create_directories(fs::path(at).parent_path());
    fs::copy_file(from, at, fs::copy_options::overwrite_existing);
    return at;
  };
  testing::FakeHost host;
  host.mounts[{0, 91}] = {.type = "overlay", .point = root + "/merged", .root = "/"};
  host.processes[42] = {.root = root + "/proc42", .started_at = seconds_from_now(-60)};
  host.processes[43] = {.root = root + "/proc43", .started_at = seconds_from_now(-60)};
  const CopyQuery q{.name = name, .id = **id, .pids = {42, 43}};
  const CopyPlaces places{
      .search = {root + "/search"}, .caches = {root + "/cache"}, .ended_at = seconds_from_now(0)};
  EXPECT_FALSE(find_copy(host, q, places).has_value());
  std::vector<std::pair<std::string, std::string>> expected;  // path, where; last first
  const auto cached = cached_file(root + "/cache", **id, EntryKind::kElf);
  expected.emplace_back(put(cached), "perf's build-id cache");
  expected.emplace_back(put(root + "/merged" + name), "the mounted overlay at " + root + "/merged");
  expected.emplace_back(put(root + "/proc43" + name), "/proc/43/root");
  expected.emplace_back(put(root + "/search" + name), "--search " + root + "/search");
  expected.emplace_back(put(root + "/proc42" + name), "/proc/42/root");
  for (size_t i = 0; i < expected.size(); ++i) {
    // Only the files up to i are there: the last one put is found.
    for (size_t j = i + 1; j < expected.size(); ++j) fs::remove(expected[j].first);
    auto found = find_copy(host, q, places);
    ASSERT_TRUE(found.has_value()) << i;
    EXPECT_EQ(found->path, expected[i].first);
    EXPECT_EQ(found->where, expected[i].second);
    for (size_t j = i + 1; j < expected.size(); ++j) put(expected[j].first);
  }
  // Another program at the first place is passed over; a reused pid's root is not looked in.
  put(root + "/proc42" + name, "/usr/bin/false");
  EXPECT_EQ(find_copy(host, q, places)->where, "--search " + root + "/search");
  put(root + "/proc42" + name);
  host.processes[42].started_at = seconds_from_now(60);
  EXPECT_EQ(find_copy(host, q, places)->where, "--search " + root + "/search");
}

}  // namespace
}  // namespace pdfix::resolve
