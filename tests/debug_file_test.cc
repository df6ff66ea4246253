// A binary's separate debug file found at each place distributions, perf and libdebuginfod put
// it, in order, and only where the file there has the binary's build-id. The files are made by
// binutils as a distribution makes them: objcopy --only-keep-debug, strip, --add-gnu-debuglink.
#include "resolve/debug_file.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "resolve/elf_build_id.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

class DebugFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pdfix-debug-" + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/usr/bin");
    std::ofstream(dir_ + "/p.c") << "int main(void) { return 0; }\n";
    ASSERT_EQ(run("gcc -g -O1 -o usr/bin/p p.c && objcopy --only-keep-debug usr/bin/p p.debug && "
                  "strip --strip-debug usr/bin/p && objcopy --add-gnu-debuglink=p.debug usr/bin/p"),
              0);
    auto id = build_id_of_file(dir_ + "/usr/bin/p");
    ASSERT_TRUE(id.ok() && id->has_value());
    id_ = **id;
    binary_ = dir_ + "/usr/bin/p";
  }
  void TearDown() override { fs::remove_all(dir_); }
  int run(const std::string& command) {
    return std::system(("cd " + dir_ + " && " + command).c_str());
  }
  // Puts the debug file at `path` (under dir_).
  std::string place(const std::string& path) {
    fs::create_directories(fs::path(dir_ + path).parent_path());
    fs::copy_file(dir_ + "/p.debug", dir_ + path, fs::copy_options::overwrite_existing);
    return dir_ + path;
  }
  std::string build_id_path() const {
    const std::string hex = id_.hex();
    return "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  }

  std::string dir_, binary_;
  format::BuildId id_;
};

TEST_F(DebugFiles, EachPlaceInOrder) {
  const CopyPlaces places{
      .sysroot = dir_, .caches = {dir_ + "/cache"}, .debuginfod_client_cache = dir_ + "/client"};
  EXPECT_FALSE(find_debug_file(id_, "/usr/bin/p", binary_, places).has_value());
  const std::string hex = id_.hex();
  // Last: libdebuginfod's client cache; before it, perf's build-id cache.
  const std::string fetched = place("/client/" + hex + "/debuginfo");
  auto f = find_debug_file(id_, "/usr/bin/p", binary_, places);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->path, fetched);
  EXPECT_EQ(f->source, DebugSource::kDebuginfod);
  const std::string cached =
      place("/cache/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + "/debug");
  f = find_debug_file(id_, "/usr/bin/p", binary_, places);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->path, cached);
  EXPECT_EQ(f->source, DebugSource::kCache);
  // The binary's .gnu_debuglink, under /usr/lib/debug, in .debug/ beside it, beside it.
  for (const char* at :
       {"/usr/lib/debug/usr/bin/p.debug", "/usr/bin/.debug/p.debug", "/usr/bin/p.debug"}) {
    const std::string linked = place(at);
    f = find_debug_file(id_, "/usr/bin/p", binary_, places);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->path, linked);
    EXPECT_EQ(f->source, DebugSource::kDebugLink);
  }
  // First: the build-id directory that -dbg and dbgsym packages fill.
  const std::string packaged = place(build_id_path());
  f = find_debug_file(id_, "/usr/bin/p", binary_, places);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->path, packaged);
  EXPECT_EQ(f->source, DebugSource::kBuildIdDir);
}

TEST_F(DebugFiles, OnlyAFileWithTheBinarysBuildIdIsItsDebugFile) {
  // Another program's debug file where this one's belongs, and under the link's name.
  std::ofstream(dir_ + "/q.c") << "int main(void) { return 1; }\n";
  ASSERT_EQ(run("gcc -g -O1 -o q q.c && objcopy --only-keep-debug q q.debug"), 0);
  for (const std::string& at : {build_id_path(), std::string("/usr/bin/p.debug")}) {
    fs::create_directories(fs::path(dir_ + at).parent_path());
    fs::copy_file(dir_ + "/q.debug", dir_ + at, fs::copy_options::overwrite_existing);
  }
  EXPECT_FALSE(find_debug_file(id_, "/usr/bin/p", binary_, {.sysroot = dir_}).has_value());
  // The right one in perf's cache is found past them.
  const std::string hex = id_.hex();
  const std::string cached =
      place("/cache/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + "/debug");
  auto f =
      find_debug_file(id_, "/usr/bin/p", binary_, {.sysroot = dir_, .caches = {dir_ + "/cache"}});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->path, cached);
}

}  // namespace
}  // namespace pdfix::resolve
