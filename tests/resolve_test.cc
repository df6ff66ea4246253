// The resolver's trust rules: which file, of this host, a container or a cache, is the one a map
// record names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
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
#include "fixture/perf_data_builder.h"
#include "fixture/resolve_files.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "resolve/elf_build_id.h"
#include "resolve/mountinfo.h"
#include "resolve/proc_modules.h"
#include "resolve/resolver.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

TEST_F(ResolveFiles, TheMappedInodeOrNothing) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  Resolver r({}, host);
  MapQuery q = user_map(dir_ + "/prog", true);
  ASSERT_TRUE(r.resolve(q, rec.view()).id.has_value());
  EXPECT_EQ(hex_of(r.resolve(q, rec.view()).id), expected_);
  EXPECT_EQ(r.resolve(q, rec.view()).source, "file");
  // Replaced since the recording began: same path, another inode, made after the start.
  rec.started_at = (time(nullptr) - 60) * kSecond;
  fs::copy_file(dir_ + "/prog", dir_ + "/prog.new");
  fs::rename(dir_ + "/prog.new", dir_ + "/prog");
  Resolver again({}, host);
  const Resolution& res = again.resolve(q, rec.view());
  EXPECT_FALSE(res.id.has_value());
  EXPECT_NE(res.reason.find("replaced"), std::string::npos) << res.reason;
  // The same file, but the recording began after it was made: the map was another file at that
  // path, never this one.
  rec.started_at = (time(nullptr) + 60) * kSecond;
  Resolver older({}, host);
  const Resolution& other = older.resolve(q, rec.view());
  EXPECT_FALSE(other.id.has_value());
  EXPECT_EQ(other.reason.find("replaced"), std::string::npos) << other.reason;
  EXPECT_NE(other.reason.find("give its root or layers with --search"), std::string::npos)
      << other.reason;
}

// A chroot's or container's file at a path where the host has another: the map's inode is found
// under a --search root, or under the root of its process while that process lives and is the
// one recorded; the host's file and perf's table entry from it prove nothing for the map.
TEST_F(ResolveFiles, ContainerFilesAreProvenUnderTheirOwnRoot) {
  testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.ended_at = a_minute_from_now();
  // The container's /prog is another binary than the host's file at dir_/prog.
  const std::string root = dir_ + "/root";
  fs::create_directories(root + dir_);
  fs::copy_file("/usr/bin/false", root + dir_ + "/prog");
  const std::string inside = readelf_build_id(root + dir_ + "/prog");
  ASSERT_NE(inside, expected_);
  MapQuery q = user_map(root + dir_ + "/prog", true);
  q.filename = dir_ + "/prog";
  q.pid = 42;
  // perf read the host's file at the path for its table.
  rec.add(dir_ + "/prog", expected_);

  Resolver plain({}, host);
  const Resolution& none = plain.resolve(q, rec.view());
  EXPECT_FALSE(none.id.has_value()) << none.source;
  EXPECT_EQ(plain.unproven_table_ids(),
            (std::set<std::pair<std::string, std::string>>{{dir_ + "/prog", expected_}}));

  // A copy of the container's file is another inode: no proof.
  fs::create_directories(dir_ + "/copied" + dir_);
  fs::copy_file(root + dir_ + "/prog", dir_ + "/copied" + dir_ + "/prog");
  Resolver copied({.search = {dir_ + "/copied"}}, host);
  EXPECT_FALSE(copied.resolve(q, rec.view()).id.has_value());

  Resolver searched({.search = {dir_ + "/elsewhere", root}}, host);
  const Resolution& found = searched.resolve(q, rec.view());
  EXPECT_EQ(hex_of(found.id), inside) << found.reason;
  EXPECT_EQ(found.source, "--search " + root);

  // The process lives, and started before the recording ended: its root is searched.
  host.processes[42] = {root, *rec.ended_at - kSecond};
  Resolver live({}, host);
  EXPECT_EQ(hex_of(live.resolve(q, rec.view()).id), inside);
  EXPECT_EQ(live.resolve(q, rec.view()).source, "/proc/42/root");
  // A pid reused since: the process under that pid now started after the recording ended.
  host.processes[42] = {root, *rec.ended_at + kSecond};
  Resolver reused({}, host);
  EXPECT_FALSE(reused.resolve(q, rec.view()).id.has_value());

  // Every root that holds the inode proves the same file: they agree.
  host.processes[42] = {root, *rec.ended_at - kSecond};
  fs::create_directories(dir_ + "/copy" + dir_);
  fs::create_hard_link(root + dir_ + "/prog", dir_ + "/copy" + dir_ + "/prog");
  Resolver agree({.search = {dir_ + "/copy"}}, host);
  EXPECT_EQ(hex_of(agree.resolve(q, rec.view()).id), inside);
}

// A searched layer stands for a map of an overlay by inode number alone (the overlay's device is
// not the layer's), but only when the map's device is an overlay's, or one no longer mounted:
// on a mounted btrfs subvolume the same number is another file.
TEST_F(ResolveFiles, AnInodeNumberAloneProvesOnlyAnOverlaysMap) {
  testing::FakeHost host;
  const Recording rec = this_boot(host);
  const std::string layer = dir_ + "/layer";
  MapQuery q = user_map(dir_ + "/prog", true);
  q.filename = "/pdfix-test-absent" + dir_ + "/prog";
  fs::create_directories(layer + "/pdfix-test-absent" + dir_);
  fs::create_hard_link(dir_ + "/prog", layer + q.filename);
  q.maj = 0;
  q.min = 4242;  // an anonymous device of this machine
  Resolver gone({.search = {layer}}, host);
  EXPECT_EQ(hex_of(gone.resolve(q, rec.view()).id), expected_);
  host.mounts[{0, 4242}] = {.type = "overlay"};
  Resolver overlay({.search = {layer}}, host);
  EXPECT_EQ(hex_of(overlay.resolve(q, rec.view()).id), expected_);
  host.mounts[{0, 4242}] = {.type = "btrfs"};
  Resolver btrfs({.search = {layer}}, host);
  EXPECT_FALSE(btrfs.resolve(q, rec.view()).id.has_value());
}

// A file with no GNU build-id (Go's default) is proven to be the mapped one by its device and
// inode alone, on the host and boot that recorded, unchanged since; never by its path.
TEST_F(ResolveFiles, AFileWithoutABuildIdIsProvenByItsInodeAlone) {
  testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.ended_at = a_minute_from_now();
  const std::string path = dir_ + "/noid";
  ASSERT_EQ(std::system(
                ("objcopy --remove-section .note.gnu.build-id " + dir_ + "/prog " + path).c_str()),
            0);
  ASSERT_EQ(readelf_build_id(path), "");
  const MapQuery q = user_map(path, true);
  Resolver r({}, host);
  const Resolution& proven = r.resolve(q, rec.view());
  EXPECT_FALSE(proven.id.has_value());
  EXPECT_EQ(proven.file, path);
  EXPECT_EQ(proven.absence, Resolution::Absence::kNoBuildIdInFile);
  EXPECT_NE(proven.reason.find("no GNU build-id in the file"), std::string::npos) << proven.reason;
  // The same inode number on another device is another file.
  MapQuery other_device = q;
  other_device.min += 1;
  Resolver device({}, host);
  EXPECT_EQ(device.resolve(other_device, rec.view()).file, "");
  // A map record without device and inode (MMAP): the path alone proves nothing.
  Resolver by_path({}, host);
  EXPECT_EQ(by_path.resolve(user_map(path, false), rec.view()).file, "");
  // Modified after the recording ended: stale.
  Recording before = rec;
  before.ended_at = int64_t{1000} * kSecond;
  Resolver stale({}, host);
  const Resolution& s = stale.resolve(q, before.view());
  EXPECT_EQ(s.file, "");
  EXPECT_NE(s.reason.find("modified after"), std::string::npos) << s.reason;
  // Another host's recording: no inode of this machine proves anything.
  Recording elsewhere = rec;
  elsewhere.hostname = "another-host";
  Resolver away({}, host);
  EXPECT_EQ(away.resolve(q, elsewhere.view()).file, "");
  // Under --sysroot a file is proven by its build-id, which this one has not.
  Resolver sysroot({.sysroot = "/"}, host);
  EXPECT_EQ(sysroot.resolve(q, rec.view()).file, "");
  // Under a process's root (a container's file), only while the process is the one recorded.
  const std::string root = dir_ + "/root";
  fs::create_directories(root + "/opt");
  fs::create_hard_link(path, root + "/opt/noid");
  MapQuery inside = q;
  inside.filename = "/opt/noid";
  inside.pid = 42;
  host.processes[42] = {root, *rec.ended_at - kSecond};
  Resolver live({}, host);
  EXPECT_EQ(live.resolve(inside, rec.view()).file, root + "/opt/noid");
  host.processes[42] = {root, *rec.ended_at + kSecond};
  Resolver reused({}, host);
  EXPECT_EQ(reused.resolve(inside, rec.view()).file, "");
}

TEST_F(ResolveFiles, ModifiedAfterTheRecordingIsStale) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.ended_at = int64_t{1000} * kSecond;  // 1970: every file here is newer
  Resolver r({}, host);
  const Resolution& res = r.resolve(user_map(dir_ + "/prog"), rec.view());
  EXPECT_FALSE(res.id.has_value());
  EXPECT_NE(res.reason.find("modified after"), std::string::npos) << res.reason;
}

TEST_F(ResolveFiles, AnotherHostsRecordingIsNotGivenThisMachinesFiles) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.hostname += "-elsewhere";
  Resolver r({}, host);
  const Resolution& res = r.resolve(user_map(dir_ + "/prog", true), rec.view());
  EXPECT_FALSE(res.id.has_value());
  EXPECT_NE(res.reason.find("recorded on recorder-elsewhere"), std::string::npos) << res.reason;
  // A sysroot is the other host's files: that works.
  Resolver with_root({.sysroot = "/"}, host);
  const Resolution& rooted = with_root.resolve(user_map(dir_ + "/prog"), rec.view());
  ASSERT_TRUE(rooted.id.has_value()) << rooted.reason;
  EXPECT_EQ(hex_of(rooted.id), expected_);
}

TEST_F(ResolveFiles, SysrootAndKnownIdsResolvePathsThatDoNotExistHere) {
  fs::create_directories(dir_ + "/root/opt/app");
  fs::copy_file(dir_ + "/prog", dir_ + "/root/opt/app/server");
  const testing::FakeHost host;
  const Recording rec;
  Resolver r({.sysroot = dir_ + "/root"}, host);
  const Resolution& res = r.resolve(user_map("/opt/app/server"), rec.view());
  ASSERT_TRUE(res.id.has_value()) << res.reason;
  EXPECT_EQ(hex_of(res.id), expected_);
  EXPECT_EQ(res.source, "sysroot");

  Resolver none({}, host);
  EXPECT_FALSE(none.resolve(user_map("/opt/app/server"), rec.view()).id.has_value());

  ResolverConfig known;
  known.known["/opt/app/server"] = *BuildId::from_hex("00112233445566778899aabbccddeeff00112233");
  Resolver k(known, host);
  const Resolution& given = k.resolve(user_map("/opt/app/server"), rec.view());
  ASSERT_TRUE(given.id.has_value());
  EXPECT_EQ(hex_of(given.id), "00112233445566778899aabbccddeeff00112233");
}

TEST(Resolver, TableWinsOverFilesAndAmbiguityGivesNothing) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.add("/usr/bin/true", "aa");
  Resolver r({}, host);
  EXPECT_EQ(r.resolve({"/usr/bin/true", 2}, rec.view()).source, "build-id table");
  rec.add("/usr/bin/true", "bb");
  Resolver twice({}, host);
  const Resolution& res = twice.resolve({"/usr/bin/true", 2}, rec.view());
  EXPECT_FALSE(res.id.has_value());
  EXPECT_EQ(res.reason, "ambiguous build-id table");
}

// A table that names a file twice is no answer, and not a reason to ask elsewhere either: the
// file under the sysroot would give an id, but which of the two mappings it was is unknown.
TEST_F(ResolveFiles, AnAmbiguousTableIsNotPassedOverForTheFile) {
  fs::create_directories(dir_ + "/root/opt/app");
  fs::copy_file(dir_ + "/prog", dir_ + "/root/opt/app/server");
  const testing::FakeHost host;
  Recording rec;
  rec.add("/opt/app/server", expected_);
  rec.add("/opt/app/server", "00112233445566778899aabbccddeeff00112233");
  Resolver r({.sysroot = dir_ + "/root"}, host);
  const Resolution& res = r.resolve(user_map("/opt/app/server"), rec.view());
  EXPECT_FALSE(res.id.has_value()) << res.source;
  EXPECT_EQ(res.reason, "ambiguous build-id table");
}

TEST(Resolver, KernelAndModulesOfThisBootFromTheHostsNotes) {
  testing::FakeHost host;
  host.kernel_id = BuildId::from_hex("1111111111111111111111111111111111111111");
  host.module_ids["nf_tables"] = *BuildId::from_hex("2222222222222222222222222222222222222222");
  const Recording rec = this_boot(host);
  Resolver r({}, host);
  const Resolution& kernel = r.resolve({"[kernel.kallsyms]_text", 1}, rec.view());
  ASSERT_TRUE(kernel.id.has_value()) << kernel.reason;
  EXPECT_EQ(hex_of(kernel.id), "1111111111111111111111111111111111111111");
  EXPECT_EQ(kernel.source, "/sys/kernel/notes");
  const Resolution& module =
      r.resolve({"/lib/modules/6.1.0-test/kernel/nf_tables.ko.xz", 1}, rec.view());
  ASSERT_TRUE(module.id.has_value()) << module.reason;
  EXPECT_EQ(hex_of(module.id), "2222222222222222222222222222222222222222");
  EXPECT_EQ(module.source, "/sys/module notes");
}

TEST(Resolver, KernelOfAnotherBootIsNotTakenFromThisMachine) {
  testing::FakeHost host;
  host.kernel_id = BuildId::from_hex("1111111111111111111111111111111111111111");
  host.module_ids["nf_tables"] = *BuildId::from_hex("2222222222222222222222222222222222222222");
  Recording older = this_boot(host);
  older.osrelease = "2.6.32-ancient";
  Recording rebooted = this_boot(host);
  *rebooted.kernel_text += 0x200000;  // KASLR put the kernel elsewhere: another boot
  Recording elsewhere = this_boot(host);
  elsewhere.hostname = "another";
  for (const Recording& rec : {older, rebooted, elsewhere}) {
    Resolver r({}, host);
    const Resolution& res = r.resolve({"[kernel.kallsyms]_text", 1}, rec.view());
    EXPECT_FALSE(res.id.has_value()) << rec.hostname << " " << rec.osrelease;
    EXPECT_NE(res.reason.find("not of this boot"), std::string::npos);
    EXPECT_FALSE(r.resolve({"[nf_tables]", 1}, rec.view()).id.has_value());
  }
}

TEST(ElfNotes, ThisProcesssVdsoHasABuildId) {
  const resolve::LiveHost live;
  ASSERT_FALSE(live.vdso().empty());
  auto id = build_id_of_elf(live.vdso());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(id->has_value());
}

TEST(Resolver, VdsoOfThisBootIsTheHostsOfTheSameSize) {
  testing::FakeHost host;
  const resolve::LiveHost live;
  host.vdso_image = live.vdso();
  ASSERT_FALSE(host.vdso_image.empty());
  Resolver r({}, host);
  MapQuery q{"[vdso]", 2};
  q.len = host.vdso_image.size();
  const Recording rec = this_boot(host);
  const Resolution& res = r.resolve(q, rec.view());
  ASSERT_TRUE(res.id.has_value()) << res.reason;
  EXPECT_EQ(res.source, "this process's vdso");
  q.len += 4096;  // another ABI's vdso
  EXPECT_FALSE(r.resolve(q, rec.view()).id.has_value());
  Recording rebooted = rec;
  *rebooted.kernel_text += 0x200000;
  Resolver other({}, host);
  q.len = host.vdso_image.size();
  EXPECT_FALSE(other.resolve(q, rebooted.view()).id.has_value());
}

// A host made anew (follow, each chunk) sees a mount made since, and only then reads the table
// again; the host before keeps the table it read. In a child with a mount namespace of its own,
// so the mount is nobody else's.
TEST(LiveHostAnew, SeesAMountMadeSinceWhileTheHostBeforeKeepsItsTable) {
  const std::string dir = testing::write_temp({}, "mount") + ".d";
  std::filesystem::create_directories(dir);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // 10: no namespace (not root); 11-14: a wrong answer.
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      _exit(10);
    }
    const LiveHost host;
    const std::optional<int64_t> boot = host.boot_time();
    (void)host.overlays();  // the table as it is before the mount
    if (mount("pdfix-test", dir.c_str(), "tmpfs", 0, "size=4k") != 0) _exit(10);
    struct stat st{};
    if (stat(dir.c_str(), &st) != 0) _exit(10);
    const std::unique_ptr<Host> now = host.anew();
    if (!now->mount(major(st.st_dev), minor(st.st_dev)).has_value()) _exit(11);
    if (host.mount(major(st.st_dev), minor(st.st_dev)).has_value()) _exit(12);
    // Unchanged since: the same table, and the boot as it was.
    const std::unique_ptr<Host> again = now->anew();
    if (!again->mount(major(st.st_dev), minor(st.st_dev)).has_value()) _exit(13);
    if (again->boot_time() != boot) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 10) << "no mount namespace or tmpfs here: root is needed";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: the new mount unseen; 12: the old host's table "
                                       "changed; 13: lost when unchanged; 14: the boot changed";
}

}  // namespace
}  // namespace pdfix::resolve
