// The keep step (store/keep_step.h) as archive, store and fix take it: from a recording's listing
// to the files kept, the bundle chained and the verdict. readelf and tar are the referees.
#include "store/keep_step.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "fixture/resolve_files.h"
#include "inspect/buildid_list.h"
#include "passes/repair.h"
#include "resolve/cache_layout.h"

namespace pdfix::store {
namespace {
namespace fs = std::filesystem;
using testing::Bytes;
using testing::PerfDataBuilder;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A recording of /usr/bin/prog, named by its build-id, and a sysroot that holds the file.
class KeepStep : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pdfix-keep-step-" + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/root/usr/bin");
    fs::copy_file("/usr/bin/true", dir_ + "/root/usr/bin/prog");
    prog_id_ = resolve::readelf_build_id(dir_ + "/root/usr/bin/prog");
    ASSERT_EQ(prog_id_.size(), 40U);
    const format::BuildId id = *format::BuildId::from_hex(prog_id_);
    PerfDataBuilder b;
    b.attr({}).mmap2_build_id(1, 0x400000, 0x1000, 0, "/usr/bin/prog",
                              Bytes(id.bytes.begin(), id.bytes.begin() + id.size));
    recording_ = dir_ + "/perf.data";
    fs::copy_file(testing::write_temp(b.build()), recording_);
    auto in = io::open_input(recording_);
    ASSERT_TRUE(in.ok()) << in.status();
    in_.emplace(*std::move(in));
    auto dsos = inspect::list_build_ids(*in_, {.every_source = true, .count_samples = true});
    ASSERT_TRUE(dsos.ok()) << dsos.status();
    dsos_ = *std::move(dsos);
    resolver_.emplace(resolve::ResolverConfig{.sysroot = dir_ + "/root"}, host_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  KeepRequest request() {
    return {.dsos = &dsos_,
            .facts = passes::recording_facts(dsos_, passes::Common{}),
            .resolver = &*resolver_,
            .recording = &*in_};
  }

  std::string dir_;
  std::string prog_id_;
  std::string recording_;
  testing::FakeHost host_;
  std::optional<io::Input> in_;
  resolve::RecordedDsos dsos_;
  std::optional<resolve::Resolver> resolver_;
};

TEST_F(KeepStep, ACacheGetsTheProvenFileOnce) {
  KeepRequest r = request();
  r.cache = dir_ + "/cache";
  auto first = keep_recording(r, host_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->kept.added, 1U);
  EXPECT_EQ(first->verdict().missing, 0U);
  EXPECT_TRUE(first->unwind_tables);  // a cache serves any recording
  const std::string cached =
      resolve::cached_file(r.cache, *format::BuildId::from_hex(prog_id_), EntryKind::kElf);
  EXPECT_EQ(resolve::readelf_build_id(cached), prog_id_);
  auto again = keep_recording(r, host_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->kept.added, 0U);
  EXPECT_EQ(again->kept.present, 1U);
}

TEST_F(KeepStep, ABundleHoldsTheRecordingJoinsTheChainAndNeverReplacesIt) {
  KeepRequest r = request();
  fs::create_directories(dir_ + "/bundles");
  auto chain = BundleChain::open(dir_ + "/bundles");
  ASSERT_TRUE(chain.ok()) << chain.status();
  r.chain = &*chain;
  r.slim = true;
  r.bundle = dir_ + "/bundles/first.tar.zst";
  auto first = keep_recording(r, host_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->unwind_tables);  // no user stack copies in the recording
  EXPECT_EQ(first->kept.slim, 1U);
  const std::string listing = resolve::run("tar --zstd -tf '" + r.bundle + "'");
  EXPECT_NE(listing.find("perf.data"), std::string::npos) << listing;
  EXPECT_NE(listing.find("usr/bin/prog/" + prog_id_ + "/elf"), std::string::npos) << listing;
  EXPECT_EQ(chain->size(), 1U);
  // The next bundle of the chain names the file in the first instead of holding it.
  r.bundle = dir_ + "/bundles/second.tar.zst";
  auto second = keep_recording(r, host_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->kept.elsewhere, 1U);
  EXPECT_EQ(resolve::run("tar --zstd -tf '" + r.bundle + "'").find(prog_id_), std::string::npos);

  const std::string before = slurp(recording_);
  r.chain = nullptr;
  r.bundle = recording_;
  EXPECT_FALSE(keep_recording(r, host_).ok());
  EXPECT_EQ(slurp(recording_), before);
}

}  // namespace
}  // namespace pdfix::store
