// Keeping binaries: perf's build-id cache layout, which copies count as proof, and storing into a
// cache. readelf and perf's own cache tree are the referees.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <thread>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "inspect/buildid_list.h"
#include "io/input.h"
#include "passes/repair.h"
#include "resolve/cache_layout.h"
#include "store/binaries.h"
#include "store/cache_store.h"
#include "store/keep_binaries.h"
#include "store/keep_verdict.h"
#include "store/symfs_layout.h"

namespace pdfix::store {
namespace {
namespace fs = std::filesystem;
using testing::Bytes;
using testing::PerfDataBuilder;

std::string readelf_build_id(const std::string& path) {
  std::string out;
  FILE* p = popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r");
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p != nullptr) pclose(p);
  std::smatch m;
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

format::BuildId id_of(const std::string& hex) { return *format::BuildId::from_hex(hex); }

Bytes bytes_of(const format::BuildId& id) { return {id.bytes.begin(), id.bytes.begin() + id.size}; }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// As perf 6.1 laid out its own cache for `perf record` of /usr/bin/seq here:
// .build-id/10/2c01a4... -> ../../usr/bin/seq/102c01a4..., and the file is `elf` beside it.
TEST(CacheLayout, IsPerfs) {
  const auto id = id_of("102c01a482486cf7464ac936350a657487b58268");
  auto e = cache_entry("/usr/bin/seq", id, EntryKind::kElf);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->dir, "usr/bin/seq/102c01a482486cf7464ac936350a657487b58268");
  EXPECT_EQ(e->file, "usr/bin/seq/102c01a482486cf7464ac936350a657487b58268/elf");
  EXPECT_EQ(e->link, ".build-id/10/2c01a482486cf7464ac936350a657487b58268");
  EXPECT_EQ(e->link_target, "../../usr/bin/seq/102c01a482486cf7464ac936350a657487b58268");
  auto k = cache_entry("[kernel.kallsyms]", id, EntryKind::kKallsyms);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->file, "[kernel.kallsyms]/102c01a482486cf7464ac936350a657487b58268/kallsyms");
  auto v = cache_entry("[vdso]", id, EntryKind::kVdso);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->file, "[vdso]/102c01a482486cf7464ac936350a657487b58268/vdso");
  EXPECT_EQ(cached_file("/c", id, EntryKind::kElf),
            "/c/.build-id/10/2c01a482486cf7464ac936350a657487b58268/elf");
  EXPECT_EQ(entry_kind_of("[kernel.kallsyms]_text"), EntryKind::kKallsyms);
  EXPECT_EQ(entry_kind_of("[vdso]"), EntryKind::kVdso);
  EXPECT_EQ(entry_kind_of("/lib/modules/6.1/a.ko.xz"), EntryKind::kElf);
}

// The name comes from the recording: it must not steer a write out of the cache.
Binary by_path(const std::string& name, const std::string& content, std::vector<uint32_t> pids) {
  return {.name = name,
          .from = Binary::From::kFile,
          .path = "/unused",
          .sha256 = sha256_hex({reinterpret_cast<const uint8_t*>(content.data()), content.size()}),
          .pids = std::move(pids)};
}

// Two files at one path (a host's Go program and a container's) never share a root; one content
// at one path is kept once, for all its processes; each root lists its processes.
TEST(SymfsLayout, TwoFilesAtOnePathGoToTwoRoots) {
  // sha256("abc"), from FIPS 180-2's examples.
  EXPECT_EQ(sha256_hex({reinterpret_cast<const uint8_t*>("abc"), 3}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::vector<Binary> files = {by_path("/usr/bin/app", "host", {10}),
                                     by_path("/usr/bin/app", "container", {20, 21}),
                                     by_path("/usr/bin/tool", "tool", {10}),
                                     by_path("/usr/bin/app", "host", {11}),
                                     {.name = "/usr/bin/unproven", .pids = {30}}};
  const SymfsLayout layout = symfs_layout(files, std::nullopt);
  ASSERT_EQ(layout.roots.size(), 2U);
  EXPECT_EQ(layout.roots[0].dir, "symfs/0");
  EXPECT_EQ(layout.roots[1].dir, "symfs/1");
  EXPECT_EQ(layout.binaries, (std::vector<std::vector<size_t>>{{0, 2}, {1}}));
  EXPECT_EQ(layout.roots[0].pids, (std::vector<uint32_t>{10, 11}));
  EXPECT_EQ(layout.roots[1].pids, (std::vector<uint32_t>{20, 21}));
  EXPECT_EQ(symfs_entry(layout.roots[1], "/usr/bin/app"), "symfs/1/usr/bin/app");
  EXPECT_EQ(symfs_entry(layout.roots[0], "/usr/../../etc/passwd"), std::nullopt);
  EXPECT_EQ(symfs_entry(layout.roots[0], "relative"), std::nullopt);

  auto back = parse_symfs_manifest(symfs_manifest(layout));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->roots.size(), 2U);
  EXPECT_EQ(back->roots[1].files[0].path, "/usr/bin/app");
  EXPECT_EQ(back->roots[1].files[0].sha256, files[1].sha256);
  EXPECT_EQ(back->roots[1].pids, (std::vector<uint32_t>{20, 21}));
  // A bundle's manifest does not choose where a root lies.
  auto moved = parse_symfs_manifest(R"({"roots":[{"dir":"../../etc","files":[],"pids":[]}]})");
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->roots[0].dir, "symfs/0");
  EXPECT_FALSE(parse_symfs_manifest(R"({"roots":[{"files":[],"pids":[-1]}]})").ok());
  EXPECT_FALSE(parse_symfs_manifest("not json").ok());
}

TEST(CacheLayout, NamesThatLeaveTheCacheAreRefused) {
  const auto id = id_of("102c01a482486cf7464ac936350a657487b58268");
  for (const char* name : {"/../../etc/passwd", "/usr/../../x", "/a/./b", "", "/", "//"}) {
    EXPECT_FALSE(cache_entry(name, id, EntryKind::kElf).has_value()) << name;
  }
}

class StoreFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pdfix-store-" + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/root/usr/bin");
    fs::copy_file("/usr/bin/true", dir_ + "/root/usr/bin/prog");
    fs::copy_file("/usr/bin/false", dir_ + "/root/usr/bin/other");
    prog_id_ = readelf_build_id(dir_ + "/root/usr/bin/prog");
    other_id_ = readelf_build_id(dir_ + "/root/usr/bin/other");
    ASSERT_EQ(prog_id_.size(), 40U);
    ASSERT_EQ(other_id_.size(), 40U);
    ASSERT_NE(prog_id_, other_id_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<Binary> find(const Bytes& recording, const testing::FakeHost& host,
                           resolve::ResolverConfig config, bool hits_only = false,
                           FindMemory* memory = nullptr) {
    auto in = io::open_input(testing::write_temp(recording));
    EXPECT_TRUE(in.ok()) << in.status();
    auto dsos = inspect::list_build_ids(
        *in, {.hits = hits_only, .every_source = true, .count_samples = true});
    EXPECT_TRUE(dsos.ok()) << dsos.status();
    if (!dsos.ok()) return {};
    resolve::Resolver resolver(std::move(config), host);
    // The recording's time span is its file's, as common_for takes it for a run.
    const io::RecordingSpan span = io::recording_span(*in);
    const passes::Common run{.recording_started_at = span.started_at,
                             .recording_ended_at = span.ended_at};
    auto found = find_binaries(*dsos, passes::recording_facts(*dsos, run), host,
                               {.resolver = &resolver, .memory = memory});
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? found->binaries : std::vector<Binary>{};
  }

  std::string dir_;
  std::string prog_id_;
  std::string other_id_;
};

TEST_F(StoreFiles, OnlyAFileWithTheNamedIdIsProof) {
  const Bytes wrong(20, 0xab);
  PerfDataBuilder b;
  b.attr({})
      .mmap2_build_id(1, 0x400000, 0x1000, 0, "/usr/bin/prog", bytes_of(id_of(prog_id_)))
      // /usr/bin/other is there, but it is another binary than the one named.
      .mmap2_build_id(1, 0x500000, 0x1000, 0, "/usr/bin/other", wrong)
      .mmap2_build_id(1, 0x600000, 0x1000, 0, "/usr/bin/gone", bytes_of(id_of(other_id_)))
      // Another name for an id already named: one copy per id.
      .mmap2_build_id(2, 0x400000, 0x1000, 0, "/usr/bin/prog-link", bytes_of(id_of(prog_id_)));
  testing::FakeHost host;
  const auto found = find(b.build(), host, {.sysroot = dir_ + "/root"});
  ASSERT_EQ(found.size(), 3U);
  EXPECT_EQ(found[0].name, "/usr/bin/prog");
  EXPECT_EQ(found[0].from, Binary::From::kFile);
  EXPECT_EQ(found[0].path, dir_ + "/root/usr/bin/prog");
  EXPECT_EQ(found[1].name, "/usr/bin/other");
  EXPECT_EQ(found[1].from, Binary::From::kNothing);
  EXPECT_NE(found[1].missing.find("another build-id"), std::string::npos) << found[1].missing;
  EXPECT_EQ(found[2].from, Binary::From::kNothing);
  EXPECT_NE(found[2].missing.find("no such file"), std::string::npos) << found[2].missing;
}

// A container's file while the container lives: under the root of a process that maps it, but
// not one whose pid was reused since the recording, or under a container's mounted overlay.
// follow's chunks: what one found is used by the next while its files are unchanged, and found
// again once they changed.
TEST_F(StoreFiles, WhatARunFoundIsUsedAgainOnlyWhileItsFilesAreUnchanged) {
  PerfDataBuilder b;
  b.attr({}).mmap2_build_id(1, 0x400000, 0x1000, 0, "/usr/bin/prog", bytes_of(id_of(prog_id_)));
  const Bytes recording = b.build();
  testing::FakeHost host;
  const resolve::ResolverConfig config{.sysroot = dir_ + "/root"};
  const std::string prog = dir_ + "/root/usr/bin/prog";
  FindMemory memory;
  auto found = find(recording, host, config, false, &memory);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, prog);
  EXPECT_EQ(memory.size(), 1U);

  // What is remembered is what the next run takes: here a finding of another file, with a debug
  // file beside it.
  const std::string key = FindMemory::key("/usr/bin/prog", id_of(prog_id_), std::nullopt);
  const std::string copy = dir_ + "/copy";
  const std::string debug = dir_ + "/copy.debug";
  fs::copy_file(prog, copy);
  fs::copy_file(prog, debug);
  memory.remember(key, {.copy = {Binary::From::kFile, copy, "remembered", ""},
                        .debug = resolve::Copy{Binary::From::kFile, debug, "its debug file", ""}});
  found = find(recording, host, config, false, &memory);
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].evidence, "remembered");
  EXPECT_EQ(found[1].kind, EntryKind::kDebug);
  EXPECT_EQ(found[1].path, debug);

  // The debug file gone: found again, from the file itself.
  fs::remove(debug);
  EXPECT_FALSE(memory.recall(key));
  memory.remember(key, {.copy = {Binary::From::kFile, copy, "remembered", ""}});
  ASSERT_TRUE(memory.recall(key));
  // The copy changed in place (another binary's bytes at the same inode): found again, and the
  // file at the path is the one named.
  {
    std::ofstream(copy, std::ios::binary | std::ios::trunc)
        << std::ifstream("/usr/bin/false", std::ios::binary).rdbuf();
  }
  EXPECT_FALSE(memory.recall(key));
  found = find(recording, host, config, false, &memory);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].path, prog);
  EXPECT_NE(found[0].evidence, "remembered");
  // A copy that is not a file is not remembered.
  memory.remember("kallsyms", {.copy = {Binary::From::kKallsyms, "", "kallsyms", ""}});
  EXPECT_FALSE(memory.recall("kallsyms"));
}

TEST_F(StoreFiles, AContainersFileIsFoundUnderItsProcessOrItsOverlay) {
  const std::string path = "/pdfix-test-absent/usr/bin/prog";
  fs::create_directories(dir_ + "/root/pdfix-test-absent/usr/bin");
  fs::copy_file(dir_ + "/root/usr/bin/prog", dir_ + "/root" + path);
  PerfDataBuilder b;
  b.attr({}).mmap2_build_id(42, 0x400000, 0x1000, 0, path, bytes_of(id_of(prog_id_)));
  const Bytes recording = b.build();
  const auto where = [&](const testing::FakeHost& host) {
    const auto found = find(recording, host, {});
    return found.size() == 1 && found[0].from == Binary::From::kFile
               ? found[0].path + " (" + found[0].evidence + ")"
               : std::string("none");
  };
  testing::FakeHost host;
  EXPECT_EQ(where(host), "none");
  host.processes[42] = {.root = dir_ + "/root", .started_at = 0};
  EXPECT_EQ(where(host), dir_ + "/root" + path + " (/proc/42/root)");
  // The pid now names a process that started after the recording was written.
  host.processes[42].started_at = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(where(host), "none");
  host.mounts[{0, 77}] = {.type = "overlay", .point = dir_ + "/root", .root = "/"};
  EXPECT_EQ(where(host), dir_ + "/root" + path + " (the mounted overlay at " + dir_ + "/root)");
  // A bind mount of a subtree is no container's root.
  host.mounts[{0, 77}].root = "/usr";
  EXPECT_EQ(where(host), "none");
}

TEST_F(StoreFiles, ThePerfCacheCountsOnlyWithTheRightId) {
  // A cache where /usr/bin/gone's id leads to the right binary and /usr/bin/lie's to another.
  const std::string cache = dir_ + "/cache";
  for (const auto& [name, id, file] :
       {std::tuple{"/usr/bin/gone", other_id_, "/usr/bin/false"},
        std::tuple{"/usr/bin/lie", std::string(40, 'c'), "/usr/bin/true"}}) {
    auto e = cache_entry(name, id_of(id), EntryKind::kElf);
    ASSERT_TRUE(e.has_value());
    const std::string bytes = slurp(file);
    ASSERT_TRUE(
        store_in_cache(cache, *e, {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()})
            .ok());
  }
  PerfDataBuilder b;
  b.attr({})
      .mmap2_build_id(1, 0x600000, 0x1000, 0, "/usr/bin/gone", bytes_of(id_of(other_id_)))
      .mmap2_build_id(1, 0x700000, 0x1000, 0, "/usr/bin/lie", Bytes(20, 0xcc));
  testing::FakeHost host;
  const auto found = find(b.build(), host, {.sysroot = dir_ + "/root", .buildid_dir = cache});
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].from, Binary::From::kFile);
  EXPECT_EQ(found[0].evidence, "perf's build-id cache");
  EXPECT_EQ(found[1].from, Binary::From::kNothing);
}

TEST_F(StoreFiles, KernelAndVdsoOnlyFromAHostWithTheirIds) {
  const std::string prog = slurp(dir_ + "/root/usr/bin/prog");
  const Bytes kernel_id(20, 0x11);
  PerfDataBuilder b;
  b.attr({})
      .mmap2_build_id(-1, 0xffffffff81000000ULL, 0x1000000, 0xffffffff81000000ULL,
                      "[kernel.kallsyms]_text", kernel_id, 1)
      // Any ELF image will do as the vdso: what matters is that the host's has the id.
      .mmap2_build_id(1, 0x7fff0000, 0x2000, 0, "[vdso]", bytes_of(id_of(prog_id_)));
  testing::FakeHost host;
  host.kernel_id = format::BuildId::from_bytes(kernel_id);
  host.symbols = "ffffffff81000000 T _text\nffffffff81000100 T start_kernel\n";
  host.text = 0xffffffff81000000ULL;  // what LiveHost reads from the same /proc/kallsyms
  host.vdso_image = {reinterpret_cast<const uint8_t*>(prog.data()), prog.size()};
  auto found = find(b.build(), host, {});
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].kind, EntryKind::kKallsyms);
  EXPECT_EQ(found[0].from, Binary::From::kKallsyms);
  EXPECT_EQ(found[1].kind, EntryKind::kVdso);
  EXPECT_EQ(found[1].from, Binary::From::kVdso);
  auto kallsyms = load_binary(found[0], host);
  ASSERT_TRUE(kallsyms.ok());
  EXPECT_EQ((*kallsyms)->getBuffer().str(), host.symbols);

  // Addresses hidden (kptr_restrict): kallsyms would place nothing.
  host.symbols = "0000000000000000 T _text\n";
  host.text = std::nullopt;
  found = find(b.build(), host, {});
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].from, Binary::From::kNothing);
  EXPECT_NE(found[0].missing.find("kptr_restrict"), std::string::npos) << found[0].missing;

  // Another kernel, another vdso.
  host.kernel_id = format::BuildId::from_bytes(Bytes(20, 0x22));
  const std::string other = slurp(dir_ + "/root/usr/bin/other");
  host.vdso_image = {reinterpret_cast<const uint8_t*>(other.data()), other.size()};
  found = find(b.build(), host, {});
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].from, Binary::From::kNothing);
  EXPECT_EQ(found[1].from, Binary::From::kNothing);
}

TEST_F(StoreFiles, GuestsAreMissingAndHitsFilter) {
  PerfDataBuilder b;
  // No sample_id trailers: the maps take effect before the sample, whatever its time.
  b.attr({.sample_id_all = false})
      .comm(1, 1, "prog")
      .mmap2_build_id(1, 0x400000, 0x1000, 0, "/usr/bin/prog", bytes_of(id_of(prog_id_)))
      .mmap2_build_id(1, 0x500000, 0x1000, 0, "/usr/bin/other", bytes_of(id_of(other_id_)))
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/guestprog", Bytes(20, 0x33),
                      format::kCpuModeGuestUser)
      .sample(0x400010, 1, 1, 100);
  testing::FakeHost host;
  auto all = find(b.build(), host, {.sysroot = dir_ + "/root"});
  ASSERT_EQ(all.size(), 3U);
  EXPECT_TRUE(all[2].guest);
  EXPECT_EQ(all[2].from, Binary::From::kNothing);
  auto hits = find(b.build(), host, {.sysroot = dir_ + "/root"}, /*hits_only=*/true);
  ASSERT_EQ(hits.size(), 1U);
  EXPECT_EQ(hits[0].name, "/usr/bin/prog");
}

// Between a binary's proof and its copy, its process may exit (and its root with it), or the file
// be removed or rewritten: such a binary is missing, saying why, and the rest is kept; a file of
// another binary never goes in under the id named. A system-wide recording of a busy host meets
// this (a test's processes in CI, a package upgrade).
TEST_F(StoreFiles, AFileGoneOrRewrittenSinceItsProofIsMissingAndTheRestIsKept) {
  fs::copy_file("/usr/bin/echo", dir_ + "/root/usr/bin/third");
  const std::string third_id = readelf_build_id(dir_ + "/root/usr/bin/third");
  PerfDataBuilder b;
  b.attr({})
      .mmap2_build_id(1, 0x400000, 0x1000, 0, "/usr/bin/prog", bytes_of(id_of(prog_id_)))
      .mmap2_build_id(1, 0x500000, 0x1000, 0, "/usr/bin/other", bytes_of(id_of(other_id_)))
      .mmap2_build_id(1, 0x600000, 0x1000, 0, "/usr/bin/third", bytes_of(id_of(third_id)));
  const Bytes recording = b.build();
  testing::FakeHost host;
  Named named{.binaries = find(recording, host, {.sysroot = dir_ + "/root"})};
  ASSERT_EQ(named.binaries.size(), 3U);
  for (const Binary& found : named.binaries) ASSERT_EQ(found.from, Binary::From::kFile);
  // A file kept by path whose content is no longer the one proven.
  const std::string idless = dir_ + "/idless";
  std::ofstream(idless) << "proven";
  named.idless = {by_path("/usr/bin/idless", "proven", {1})};
  named.idless[0].path = idless;

  fs::remove(dir_ + "/root/usr/bin/prog");
  fs::remove(dir_ + "/root/usr/bin/other");
  fs::copy_file("/usr/bin/true", dir_ + "/root/usr/bin/other");  // another binary
  std::ofstream(idless, std::ios::trunc) << "rewritten";

  const std::string cache = dir_ + "/cache";
  Named stored = named;
  auto kept = store_binaries(stored, host, cache, {});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->added, 1U);
  EXPECT_EQ(stored.binaries[0].from, Binary::From::kNothing);
  EXPECT_NE(stored.binaries[0].missing.find("gone before it was kept"), std::string::npos)
      << stored.binaries[0].missing;
  EXPECT_EQ(stored.binaries[1].from, Binary::From::kNothing);
  EXPECT_NE(stored.binaries[1].missing.find("no longer carries build-id " + other_id_),
            std::string::npos)
      << stored.binaries[1].missing;
  EXPECT_EQ(stored.binaries[2].from, Binary::From::kFile);
  EXPECT_EQ(stored.idless[0].from, Binary::From::kNothing);
  EXPECT_NE(stored.idless[0].missing.find("changed while it was being kept"), std::string::npos)
      << stored.idless[0].missing;
  EXPECT_EQ(judge(stored).missing, 2U);
  EXPECT_EQ(readelf_build_id(cached_file(cache, id_of(third_id), EntryKind::kElf)), third_id);
  EXPECT_FALSE(fs::exists(cached_file(cache, id_of(prog_id_), EntryKind::kElf)));
  EXPECT_FALSE(fs::exists(cached_file(cache, id_of(other_id_), EntryKind::kElf)));
  EXPECT_FALSE(fs::exists(cache + "/.symfs"));

  // A bundle the same: tar lists the one binary kept, and no root for the file by path.
  auto in = io::open_input(testing::write_temp(recording));
  ASSERT_TRUE(in.ok()) << in.status();
  const std::string bundle = dir_ + "/b.tar.zst";
  Named archived = named;
  auto bundled = archive_recording(*in, archived, host, bundle, {});
  ASSERT_TRUE(bundled.ok()) << bundled.status();
  EXPECT_EQ(archived.binaries[0].from, Binary::From::kNothing);
  EXPECT_EQ(archived.binaries[1].from, Binary::From::kNothing);
  EXPECT_EQ(archived.idless[0].from, Binary::From::kNothing);
  std::string listing;
  FILE* tar = popen(("tar --zstd -tf '" + bundle + "'").c_str(), "r");
  ASSERT_NE(tar, nullptr);
  char line[512];
  while (fgets(line, sizeof line, tar) != nullptr) listing += line;
  EXPECT_EQ(pclose(tar), 0);
  EXPECT_NE(listing.find("usr/bin/third/" + third_id + "/elf"), std::string::npos) << listing;
  EXPECT_EQ(listing.find(prog_id_), std::string::npos) << listing;
  EXPECT_EQ(listing.find(other_id_), std::string::npos) << listing;
  EXPECT_EQ(listing.find("symfs"), std::string::npos) << listing;
}

TEST_F(StoreFiles, StoringAgainOrAtOnceKeepsOneWholeFile) {
  const std::string cache = dir_ + "/cache";
  const std::string bytes = slurp("/usr/bin/true");
  const std::span<const uint8_t> view{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
  auto e = cache_entry("/usr/bin/prog", id_of(prog_id_), EntryKind::kElf);
  ASSERT_TRUE(e.has_value());
  std::vector<std::thread> writers;
  std::vector<absl::StatusOr<Stored>> results(8, absl::UnknownError("not run"));
  for (size_t i = 0; i < results.size(); ++i) {
    writers.emplace_back([&, i] { results[i] = store_in_cache(cache, *e, view); });
  }
  for (auto& w : writers) w.join();
  size_t added = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    added += *r == Stored::kAdded;
  }
  EXPECT_EQ(added, 1U) << "one writer put it there; the others found it";
  EXPECT_EQ(
      slurp(cache + "/.build-id/" + prog_id_.substr(0, 2) + "/" + prog_id_.substr(2) + "/elf"),
      bytes);
  EXPECT_EQ(readelf_build_id(cached_file(cache, id_of(prog_id_), EntryKind::kElf)), prog_id_);
  auto again = store_in_cache(cache, *e, view);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, Stored::kPresent);
  // No temporary file is left beside the entry or the link.
  size_t files = 0;
  size_t links = 0;
  for (const auto& f : fs::recursive_directory_iterator(cache)) {
    if (f.is_symlink()) {
      ++links;
    } else if (f.is_regular_file()) {
      ++files;
    }
    EXPECT_EQ(f.path().filename().string().find(".pdfix-"), std::string::npos) << f.path();
  }
  EXPECT_EQ(files, 1U);
  EXPECT_EQ(links, 1U);
}

// A file put at the name by another writer after this one looked (two follows sharing a store) is
// kept as it is, and this writer's copy goes: no rename over it.
TEST_F(StoreFiles, AFileThatAppearedMeanwhileIsKeptAndTheNewCopyDropped) {
  fs::create_directories(dir_ + "/store");
  const std::string path = dir_ + "/store/kept";
  {
    std::ofstream(path) << "the first writer's";
  }
  const std::string bytes = "another copy";
  auto written = write_new_file(
      path, FileImage::whole({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}), 0600);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_FALSE(*written);
  EXPECT_EQ(slurp(path), "the first writer's");
  // The new copy's temporary file went too.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ + "/store"), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace pdfix::store
