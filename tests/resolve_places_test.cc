// The kernel's module listing, mountinfo's overlays, and what a map's place proves.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>

#include "absl/status/status.h"
#include "fixture/fake_host.h"
#include "fixture/resolve_files.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "resolve/elf_build_id.h"
#include "resolve/find_copy.h"
#include "resolve/mountinfo.h"
#include "resolve/proc_modules.h"
#include "resolve/resolver.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

TEST(ProcModules, ReadsTheKernelsListing) {
  auto m = parse_proc_modules(
      "nf_tables 344064 0 - Live 0xffffffffc0a00000\n"
      "snd-hda-intel 57344 3 - Live 0xffffffffc0900000 (E)\n"
      "hidden 4096 0 - Live 0x0000000000000000\n\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->size(), 2U);  // an address hidden by kptr_restrict is no evidence
  EXPECT_EQ(m->at("nf_tables").address, 0xffffffffc0a00000);
  EXPECT_EQ(m->at("nf_tables").size, 344064U);
  EXPECT_TRUE(m->contains("snd_hda_intel"));  // the kernel's own spelling of the name
  auto bad = parse_proc_modules("ok 1 0 - Live 0x1000\nnot a listing\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos);
}

TEST(Mountinfo, FindsAnOverlayWithItsLayersAndEscapedPaths) {
  const std::string table =
      "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "46 42 0:40 / /var/lib/a\\040b/merged rw,relatime - overlay overlay "
      "rw,lowerdir=/l/one:/l/tw\\:o,upperdir=/u/diff,workdir=/u/work,uuid=on\n"
      "47 42 0:41 /sub /mnt/bind rw - tmpfs tmpfs rw\n";
  auto overlay = find_mount(table, 0, 40);
  ASSERT_TRUE(overlay.has_value());
  EXPECT_EQ(overlay->type, "overlay");
  EXPECT_EQ(overlay->point, "/var/lib/a b/merged");
  EXPECT_EQ(overlay->root, "/");
  EXPECT_EQ(overlay->layers, (std::vector<std::string>{"/u/diff", "/l/one", "/l/tw:o"}));
  auto bind = find_mount(table, 0, 41);
  ASSERT_TRUE(bind.has_value());
  EXPECT_EQ(bind->root, "/sub");
  EXPECT_TRUE(bind->layers.empty());
  EXPECT_EQ(find_mount(table, 254, 0)->type, "ext4");
  EXPECT_FALSE(find_mount(table, 0, 4).has_value());
  // The containers' roots: overlays mounted whole, not an overlay's subtree bound elsewhere.
  const std::vector<Mount> roots = whole_overlays(
      table + "48 42 0:40 /etc /mnt/etc rw - overlay overlay rw,upperdir=/u/diff,workdir=/w\n");
  ASSERT_EQ(roots.size(), 1U);
  EXPECT_EQ(roots[0].point, "/var/lib/a b/merged");
  EXPECT_EQ(roots[0].layers.size(), 3U);
}

// The map's device is an overlay still mounted: its merged view shows the mapped inode, also for
// a process long gone, and proves the map without any option.
TEST_F(ResolveFiles, AMountedOverlayProvesItsMaps) {
  testing::FakeHost host;
  const Recording rec = this_boot(host);
  MapQuery q = user_map(dir_ + "/prog", true);
  const std::string merged = dir_ + "/merged";
  q.filename = "/pdfix-test-absent" + dir_ + "/prog";
  fs::create_directories(merged + "/pdfix-test-absent" + dir_);
  fs::create_hard_link(dir_ + "/prog", merged + q.filename);
  Resolver unmounted({}, host);
  EXPECT_FALSE(unmounted.resolve(q, rec.view()).id.has_value());
  host.mounts[{q.maj, q.min}] = {.type = "overlay", .point = merged, .root = "/"};
  Resolver mounted({}, host);
  const Resolution& res = mounted.resolve(q, rec.view());
  EXPECT_EQ(hex_of(res.id), expected_) << res.reason;
  EXPECT_EQ(res.source, "the mounted overlay at " + merged);
}

// perf's table gives one id for a path that two files were mapped from (the host's and a
// container's): each map gets its own inode's id, and the table's id only where every other
// inode of the path is proven to be another file.
TEST_F(ResolveFiles, ATableIdIsEvidenceOnlyForItsOwnInode) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  const MapQuery host_map = user_map(dir_ + "/prog", true);
  MapQuery container_map = host_map;
  container_map.maj = 0;
  container_map.min = 77;
  container_map.ino = 4242;
  PathInodes survey;
  survey[{format::kHostMachine, host_map.filename}] = {{host_map.maj, host_map.min, host_map.ino},
                                                       {0, 77, 4242}};
  const std::string container_id(40, 'c');
  rec.add(host_map.filename, container_id);
  RecordingFacts facts = rec.view();
  facts.inodes = [&survey] { return &survey; };
  // The host's map is this host's file, whatever the table says of the path.
  Resolver r({}, host);
  EXPECT_EQ(hex_of(r.resolve(host_map, facts).id), expected_);
  // The only other file mapped there is proven to be another one: the table's id is the
  // container's.
  EXPECT_EQ(hex_of(r.resolve(container_map, facts).id), container_id);
  EXPECT_EQ(r.resolve(container_map, facts).source, "build-id table");
  // A third file at the path, proven nowhere: the table's id may be its.
  survey[{format::kHostMachine, host_map.filename}].insert({0, 78, 99});
  Resolver three({}, host);
  const Resolution& doubt = three.resolve(container_map, facts);
  EXPECT_FALSE(doubt.id.has_value());
  EXPECT_NE(doubt.reason.find("may be another file's"), std::string::npos) << doubt.reason;
  // The table's id is the host file's: perf read it at the path, for the container's map.
  Recording hosts = this_boot(host);
  hosts.add(host_map.filename, expected_);
  RecordingFacts host_facts = hosts.view();
  host_facts.inodes = [&survey] { return &survey; };
  Resolver misfiled({}, host);
  EXPECT_FALSE(misfiled.resolve(container_map, host_facts).id.has_value());
  EXPECT_EQ(hex_of(misfiled.resolve(host_map, host_facts).id), expected_);
}

// Recorded on another host that has this one's name (or in another boot): no inode proves
// anything, even the very file at the path, and the table's id is not copied into a map that
// carries an inode (perf may have read it at the host's path for a chroot's file). Under a
// --sysroot the table speaks for a path the recording maps from one file only.
TEST_F(ResolveFiles, ElsewhereNoInodeProvesAndTheTableIdStaysInTheTable) {
  testing::FakeHost host;
  host.kernel_id = BuildId::from_hex(std::string(40, 'e'));
  Recording rec = this_boot(host);
  rec.add("[kernel.kallsyms]", std::string(40, 'f'), /*misc=*/1);
  const MapQuery host_map = user_map(dir_ + "/prog", true);
  MapQuery other = host_map;
  other.min += 1;
  const std::string listed(40, 'a');
  rec.add(host_map.filename, listed);
  PathInodes one;
  one[{format::kHostMachine, host_map.filename}] = {{host_map.maj, host_map.min, host_map.ino}};
  RecordingFacts facts = rec.view();
  facts.inodes = [&one] { return &one; };
  Resolver r({}, host);
  EXPECT_FALSE(
      HostIdentity({rec.hostname, rec.osrelease, rec.kernel_text, rec.table}, rec.started_at, host)
          .same_host());
  const Resolution& left = r.resolve(host_map, facts);
  EXPECT_FALSE(left.id.has_value());
  EXPECT_NE(left.reason.find("stays in the table"), std::string::npos) << left.reason;
  EXPECT_TRUE(r.unproven_table_ids().empty());
  Resolver rooted({.sysroot = "/"}, host);
  EXPECT_EQ(hex_of(rooted.resolve(host_map, facts).id), listed);
  PathInodes two = one;
  two[{format::kHostMachine, host_map.filename}].insert({other.maj, other.min, other.ino});
  facts.inodes = [&two] { return &two; };
  Resolver doubt({.sysroot = "/"}, host);
  const Resolution& res = doubt.resolve(host_map, facts);
  EXPECT_FALSE(res.id.has_value());
  EXPECT_NE(res.reason.find("inodes prove nothing off the host"), std::string::npos) << res.reason;
}

// The kernel's ELF image where distributions install it for the recording's release, under each
// root a copy may be under (--sysroot, then the --search roots), else in a build-id cache; proven
// by carrying the id, never by its path.
TEST_F(ResolveFiles, TheKernelImageIsFoundUnderEveryCopyRootAndInTheCaches) {
  namespace fs = std::filesystem;
  const BuildId id = *BuildId::from_hex(expected_);
  const std::string release = "6.1.0-test";
  const auto install = [&](const std::string& path) {
    fs::create_directories(fs::path(path).parent_path());
    fs::copy_file(dir_ + "/prog", path);
  };
  install(dir_ + "/sysroot/boot/vmlinux-" + release);
  install(dir_ + "/search/usr/lib/debug/lib/modules/" + release + "/vmlinux");
  fs::create_directories(dir_ + "/empty");
  const auto found = [&](const CopyPlaces& places, std::string_view r = "6.1.0-test") {
    const std::optional<Copy> c = vmlinux_of(id, r, places);
    return c ? c->path : std::string("none");
  };
  EXPECT_EQ(found({.sysroot = dir_ + "/sysroot"}), dir_ + "/sysroot/boot/vmlinux-" + release);
  EXPECT_EQ(found({.sysroot = dir_ + "/empty", .search = {dir_ + "/search"}}),
            dir_ + "/search/usr/lib/debug/lib/modules/" + release + "/vmlinux");
  // Another release's paths, another kernel's id: nothing.
  EXPECT_EQ(found({.sysroot = dir_ + "/sysroot"}, "6.1.0-other"), "none");
  EXPECT_EQ(
      vmlinux_of(*BuildId::from_hex(std::string(40, 'a')), release, {.sysroot = dir_ + "/sysroot"}),
      std::nullopt);
  // In a build-id cache, whatever the release.
  const std::string cache = dir_ + "/cache";
  install(cached_file(cache, id, EntryKind::kVmlinux));
  EXPECT_EQ(found({.sysroot = dir_ + "/empty", .caches = {cache}}, ""),
            cached_file(cache, id, EntryKind::kVmlinux));
}

}  // namespace
}  // namespace pdfix::resolve
