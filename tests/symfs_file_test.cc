// Which file an unpacked bundle keeps for a map without a build-id (store/symfs_layout.h): the
// copy in the root its process's files went to.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixture/perf_data_builder.h"
#include "store/symfs_layout.h"

namespace pdfix::store {
namespace {

namespace fs = std::filesystem;

// The host's program for the host's process, the container's for the container's (one path),
// none for a process of neither or a copy that is not there.
TEST(SymfsLayout, AMapsFileIsTheOneTheRootOfItsProcessKeeps) {
  const SymfsLayout layout{
      .roots = {{.dir = "symfs/0", .files = {{.path = "/usr/bin/app"}}, .pids = {10}},
                {.dir = "symfs/1", .files = {{.path = "/usr/bin/app"}}, .pids = {20, 21}}}};
  const fs::path dir = fs::path(testing::write_temp({}, "x")).parent_path() / "unpacked";
  fs::create_directories(dir / "symfs/0/usr/bin");
  fs::create_directories(dir / "symfs/1/usr/bin");
  std::ofstream(dir / "symfs/0/usr/bin/app") << "host";
  std::ofstream(dir / "symfs/1/usr/bin/app") << "container";
  EXPECT_EQ(symfs_file_for(dir, layout, "/usr/bin/app", 10), dir.string() + "/symfs/0/usr/bin/app");
  EXPECT_EQ(symfs_file_for(dir, layout, "/usr/bin/app", 21), dir.string() + "/symfs/1/usr/bin/app");
  EXPECT_EQ(symfs_file_for(dir, layout, "/usr/bin/app", 30), "");
  EXPECT_EQ(symfs_file_for(dir, layout, "/usr/bin/other", 10), "");
  fs::remove(dir / "symfs/1/usr/bin/app");
  EXPECT_EQ(symfs_file_for(dir, layout, "/usr/bin/app", 20), "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pdfix::store
