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
  EXPECT_EQ(match(host, path, at_path, mapped, std::nullopt), Match::kTheMapped);
  EXPECT_EQ(match(host, path + ".none", at_path, mapped, std::nullopt), Match::kMissing);
  Inode other_ino = mapped;
  other_ino.ino += 1;
  EXPECT_EQ(match(host, path, at_path, other_ino, std::nullopt), Match::kAnotherInode);
  // The same number on another device, and a searched layer for a map of a real device.
  Inode other_dev = mapped;
  other_dev.min += 1;
  EXPECT_EQ(match(host, path, at_path, other_dev, std::nullopt), Match::kAnotherInode);
  const Place searched{"", PlaceKind::kSearch, "--search /"};
  EXPECT_EQ(match(host, path, searched, other_dev, std::nullopt), Match::kAnotherInode);
  // Written after the recording ended.
  EXPECT_EQ(match(host, path, at_path, mapped, seconds_from_now(-3600)), Match::kStale);
}

}  // namespace
}  // namespace pdfix::resolve
