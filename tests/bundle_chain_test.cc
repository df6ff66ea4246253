// A run's chain of bundles (pdfix follow --archive): what the chain keeps across a restart, what a
// bundle's manifest says the earlier ones hold, and unpack taking those files from beside it.
#include "store/bundle_chain.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fixture/perf_data_builder.h"
#include "store/bundle.h"
#include "store/bundle_manifest.h"

namespace pdfix::store {
namespace {
namespace fs = std::filesystem;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(BundleChain, KeepsWhatEachBundleHoldsAcrossARestartButNotALineCutShort) {
  const std::string dir = testing::write_temp({}, "chain") + ".d";
  fs::create_directories(dir);
  const std::string libc = ".debug/usr/lib/libc.so.6/aa/elf";
  const std::string app = ".debug/usr/bin/app/bb/elf";
  {
    auto chain = BundleChain::open(dir);
    ASSERT_TRUE(chain.ok()) << chain.status();
    ASSERT_TRUE(chain->add("a.tar.zst", {{libc, true}}).ok());
    ASSERT_TRUE(chain->add("b.tar.zst", {{app, false}}).ok());
    // One run a directory.
    auto second = BundleChain::open(dir);
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.status().message().find("another run"), std::string::npos);
  }
  // Killed while writing a line.
  std::ofstream(dir + "/" + BundleChain::kName, std::ios::app)
      << R"({"bundle":"c.tar.zst","files":[[".debug/usr/bin/cut/cc/elf",tr)";
  auto chain = BundleChain::open(dir);
  ASSERT_TRUE(chain.ok()) << chain.status();
  ASSERT_NE(chain->holder(libc, "c.tar.zst"), nullptr);
  EXPECT_EQ(chain->holder(libc, "c.tar.zst")->bundle, "a.tar.zst");
  EXPECT_TRUE(chain->holder(libc, "c.tar.zst")->slim);
  EXPECT_FALSE(chain->holder(app, "c.tar.zst")->slim);
  EXPECT_EQ(chain->holder(".debug/usr/bin/cut/cc/elf", "c.tar.zst"), nullptr);
  // A bundle written again is not its own earlier bundle, and then holds what it holds now.
  EXPECT_EQ(chain->holder(app, "b.tar.zst"), nullptr);
  ASSERT_TRUE(chain->add("b.tar.zst", {}).ok());
  EXPECT_EQ(chain->holder(app, "c.tar.zst"), nullptr);
  EXPECT_EQ(chain->size(), 1u);
  fs::remove_all(dir);
}

TEST(BundleManifest, NamesWhatEarlierBundlesHoldAndOnlyBesideItAndInDebug) {
  BundleManifest m;
  m.slim = {".debug/usr/bin/app/bb/elf"};
  m.elsewhere["a.tar.zst"] = {".debug/usr/bin/app/bb/elf", ".debug/[vdso]/cc/vdso"};
  auto back = parse_bundle_manifest(bundle_manifest_json(m));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->slim, m.slim);
  EXPECT_EQ(back->elsewhere, m.elsewhere);
  for (const char* bad : {R"({"slim": [], "elsewhere": {"../a.tar.zst": [".debug/x"]}})",
                          R"({"slim": [], "elsewhere": {"a.tar.zst": ["perf.data"]}})",
                          R"({"slim": [], "elsewhere": {"a.tar.zst": [".debug/../../x"]}})",
                          R"({"slim": [], "elsewhere": {"a.tar.zst": ".debug/x"}})"}) {
    EXPECT_FALSE(parse_bundle_manifest(bad).ok()) << bad;
  }
}

class ChainedBundles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::write_temp({}, "bundles") + ".d";
    fs::create_directories(dir_ + "/b");
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A bundle of a recording (its bytes: `recording`), the files `files` (name, content) under
  // .debug with their build-id links, and `manifest`.
  void write(const std::string& name, const std::string& recording,
             const std::vector<std::pair<std::string, std::string>>& files,
             const std::vector<std::string>& links, const BundleManifest& manifest) {
    auto w = BundleWriter::create(dir_ + "/b/" + name, 3);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->add_file("perf.data", bytes_of(recording), 0600).ok());
    for (const auto& [file, content] : files) {
      ASSERT_TRUE((*w)->add_file(file, bytes_of(content), 0644).ok());
    }
    for (const std::string& link : links) {
      ASSERT_TRUE((*w)->add_symlink(".debug/.build-id/bb/rest", "../../" + link).ok());
    }
    if (!manifest.empty()) {
      ASSERT_TRUE(
          (*w)->add_file(kBundleManifest, bytes_of(bundle_manifest_json(manifest)), 0644).ok());
    }
    ASSERT_TRUE((*w)->commit().ok());
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::string dir_;
};

TEST_F(ChainedBundles, UnpackTakesWhatEarlierBundlesHoldFromBesideIt) {
  const std::string app = ".debug/usr/bin/app/bbrest/elf";
  write("first.tar.zst", "first", {{app, "the app"}}, {"usr/bin/app/bbrest"}, {});
  BundleManifest m;
  m.elsewhere["first.tar.zst"] = {app};
  write("second.tar.zst", "second", {}, {"usr/bin/app/bbrest"}, m);
  auto done = unpack_bundle(dir_ + "/b/second.tar.zst", dir_ + "/u", {});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(read(dir_ + "/u/perf.data"), "second");
  EXPECT_EQ(read(dir_ + "/u/" + app), "the app");
  EXPECT_EQ(read(dir_ + "/u/.debug/.build-id/bb/rest/elf"), "the app");
  EXPECT_EQ(done->binaries, 1u);
  ASSERT_EQ(done->elsewhere.size(), 1u);
  EXPECT_EQ(done->elsewhere[0], (std::pair<std::string, size_t>{"first.tar.zst", 1}));
  // Merged into a cache, as any bundle's.
  auto merged =
      unpack_bundle(dir_ + "/b/second.tar.zst", dir_ + "/m", {.merge_cache = dir_ + "/c"});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(read(dir_ + "/c/" + app.substr(7)), "the app");
}

TEST_F(ChainedBundles, AnEarlierBundleGoneOrLackingAFileIsAnErrorAndNothingIsWritten) {
  const std::string app = ".debug/usr/bin/app/bbrest/elf";
  BundleManifest m;
  m.elsewhere["first.tar.zst"] = {app};
  write("second.tar.zst", "second", {}, {"usr/bin/app/bbrest"}, m);
  auto done = unpack_bundle(dir_ + "/b/second.tar.zst", dir_ + "/u", {});
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.status().message().find("first.tar.zst of its chain, which is not beside it"),
            std::string::npos)
      << done.status();
  EXPECT_FALSE(fs::exists(dir_ + "/u"));
  write("first.tar.zst", "first", {{".debug/usr/bin/other/cc/elf", "other"}}, {}, {});
  done = unpack_bundle(dir_ + "/b/second.tar.zst", dir_ + "/u", {});
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.status().message().find("lacks 1 of the files"), std::string::npos)
      << done.status();
  EXPECT_FALSE(fs::exists(dir_ + "/u"));
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".pdfix-"), std::string::npos) << e.path();
  }
}

}  // namespace
}  // namespace pdfix::store
