// Where build-ids come from: ELF notes (plain and compressed), and the resolver's trust rules.
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
#include "format/machine.h"
#include "format/map_kind.h"
#include "resolve/elf_build_id.h"
#include "resolve/module_area.h"
#include "resolve/mountinfo.h"
#include "resolve/proc_modules.h"
#include "resolve/resolver.h"

namespace pdfix::resolve {
namespace {
namespace fs = std::filesystem;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p != nullptr) pclose(p);
  return out;
}

// An id as hex, "" for none: a test that finds none fails instead of crashing.
std::string hex_of(const std::optional<BuildId>& id) { return id ? id->hex() : ""; }

// readelf is the referee for what a file's build-id is.
std::string readelf_build_id(const std::string& path) {
  std::smatch m;
  std::string out = run("readelf -n '" + path + "' 2>/dev/null");
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

class ResolveFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/pdfix-resolve-" + std::to_string(getpid());
    fs::create_directories(dir_);
    // A small ELF with a build-id (Debian builds everything with --build-id).
    fs::copy_file("/usr/bin/true", dir_ + "/prog", fs::copy_options::overwrite_existing);
    expected_ = readelf_build_id(dir_ + "/prog");
    ASSERT_FALSE(expected_.empty()) << "the toolchain did not give this binary a build-id";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  std::string expected_;
};

TEST_F(ResolveFiles, ElfNoteMatchesReadelf) {
  auto buf = read_maybe_compressed(dir_ + "/prog");
  ASSERT_TRUE(buf.ok());
  llvm::StringRef b = (*buf)->getBuffer();
  auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(id->has_value());
  EXPECT_EQ((*id)->hex(), expected_);
}

TEST_F(ResolveFiles, CompressedModulesAreOpened) {
  for (const std::string tool : {"gzip", "xz", "zstd -q"}) {
    const std::string ext = tool == "gzip" ? ".gz" : tool == "xz" ? ".xz" : ".zst";
    ASSERT_EQ(std::system(("cd " + dir_ + " && " + tool + " -k -f prog").c_str()), 0) << tool;
    auto buf = read_maybe_compressed(dir_ + "/prog" + ext);
    ASSERT_TRUE(buf.ok()) << buf.status();
    llvm::StringRef b = (*buf)->getBuffer();
    auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
    ASSERT_TRUE(id.ok() && id->has_value()) << ext;
    EXPECT_EQ((*id)->hex(), expected_) << ext;
  }
}

TEST_F(ResolveFiles, NotElfAndNoNote) {
  std::ofstream(dir_ + "/text") << "just text\n";
  auto buf = read_maybe_compressed(dir_ + "/text");
  llvm::StringRef b = (*buf)->getBuffer();
  EXPECT_FALSE(build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()}).ok());
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id " + dir_ + "/prog " + dir_ +
                         "/stripped")
                            .c_str()),
            0);
  buf = read_maybe_compressed(dir_ + "/stripped");
  b = (*buf)->getBuffer();
  auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(id->has_value());
}

TEST_F(ResolveFiles, FileReadByNoteSegmentsAgreesWithTheWholeFile) {
  auto id = build_id_of_file(dir_ + "/prog");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(hex_of(*id), expected_);
  for (const std::string tool : {"gzip", "xz", "zstd -q"}) {
    const std::string ext = tool == "gzip" ? ".gz" : tool == "xz" ? ".xz" : ".zst";
    ASSERT_EQ(std::system(("cd " + dir_ + " && " + tool + " -k -f prog").c_str()), 0) << tool;
    auto packed = build_id_of_file(dir_ + "/prog" + ext);
    ASSERT_TRUE(packed.ok()) << packed.status();
    EXPECT_EQ(hex_of(*packed), expected_) << ext;
  }
  // Without a build-id in its segments the file is read whole: a relocatable object keeps its
  // note in a section only, a stripped file has none.
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id " + dir_ + "/prog " + dir_ +
                         "/stripped")
                            .c_str()),
            0);
  auto none = build_id_of_file(dir_ + "/stripped");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  std::ofstream(dir_ + "/text") << "just text\n";
  EXPECT_TRUE(absl::IsInvalidArgument(build_id_of_file(dir_ + "/text").status()));
  EXPECT_TRUE(absl::IsNotFound(build_id_of_file(dir_ + "/absent").status()));
}

TEST_F(ResolveFiles, RelocatableObjectsAreReadBySection) {
  // Kernel modules are relocatable objects: no program headers, the note in a section.
  std::ofstream(dir_ + "/m.c") << "int f(void) { return 1; }\n";
  ASSERT_EQ(std::system(("cc -c -o " + dir_ + "/m0.o " + dir_ +
                         "/m.c && ld -r --build-id=sha1 -o " + dir_ + "/m.o " + dir_ + "/m0.o")
                            .c_str()),
            0);
  const std::string want = readelf_build_id(dir_ + "/m.o");
  ASSERT_FALSE(want.empty());
  auto id = build_id_of_file(dir_ + "/m.o");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(hex_of(*id), want);
}

// Every shared library of this machine (the files inject reads most): the few preads find what
// LLVM finds walking the whole file.
TEST(BuildIdOfFile, SystemLibrariesAgreeWithTheWholeFile) {
  size_t compared = 0;
  size_t with_id = 0;
  std::error_code ec;
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/bin"}) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (compared >= 400) break;
      if (!e.is_regular_file(ec) || e.file_size(ec) > (64u << 20)) continue;
      auto whole = read_maybe_compressed(e.path());
      if (!whole.ok()) continue;
      llvm::StringRef b = (*whole)->getBuffer();
      auto want = build_id_of_elf({reinterpret_cast<const uint8_t*>(b.data()), b.size()});
      auto got = build_id_of_file(e.path());
      ASSERT_EQ(want.ok(), got.ok()) << e.path();
      if (!want.ok()) continue;
      EXPECT_EQ(hex_of(*got), hex_of(*want)) << e.path();
      ++compared;
      if (want->has_value()) ++with_id;
    }
  }
  EXPECT_GT(with_id, 50U) << "too few ELF files with a build-id to say anything";
}

// A linked ELF image of either class and byte order with a GNU property note (a 12-byte
// descriptor, padded to 16 in an 8-aligned segment) and the build-id note: after the property in
// the same 8-aligned segment, or in a 4-aligned segment of its own, as linkers lay them out.
std::vector<uint8_t> tiny_elf(bool is64, bool big, bool id_after_property,
                              const std::vector<uint8_t>& id) {
  std::vector<uint8_t> out;
  auto put = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      const int shift = big ? (n - 1 - i) * 8 : i * 8;
      out.push_back(static_cast<uint8_t>(v >> shift));
    }
  };
  const int word = is64 ? 8 : 4;
  const uint64_t ehsize = is64 ? 64 : 52;
  const uint64_t phentsize = is64 ? 56 : 32;
  const uint64_t phnum = id_after_property ? 1 : 2;
  const uint64_t notes = (ehsize + phnum * phentsize + 7) / 8 * 8;
  const uint64_t property_size = 16 + 16;  // header and "GNU\0", a descriptor padded to 8
  const size_t id_align = id_after_property ? 8 : 4;
  const uint64_t id_size = 16 + (id.size() + id_align - 1) / id_align * id_align;
  out = {0x7f, 'E', 'L', 'F', static_cast<uint8_t>(is64 ? 2 : 1), static_cast<uint8_t>(big ? 2 : 1),
         1};
  out.resize(16, 0);
  put(2, 2);  // ET_EXEC
  put(is64 ? 62 : 3, 2);
  put(1, 4);
  put(0x400000, word);  // entry
  put(ehsize, word);    // phoff
  put(0, word);         // shoff, set below
  put(0, 4);
  put(ehsize, 2);
  put(phentsize, 2);
  put(phnum, 2);
  put(is64 ? 64 : 40, 2);
  put(0, 2);
  put(0, 2);
  auto phdr = [&](uint64_t offset, uint64_t size, uint64_t align) {
    put(4, 4);  // PT_NOTE
    if (is64) put(4, 4);
    put(offset, word);
    put(0x400000 + offset, word);
    put(0x400000 + offset, word);
    put(size, word);
    put(size, word);
    if (!is64) put(4, 4);
    put(align, word);
  };
  if (id_after_property) {
    phdr(notes, property_size + id_size, 8);
  } else {
    phdr(notes, property_size, 8);
    phdr(notes + property_size, id_size, 4);
  }
  auto note = [&](uint32_t type, const std::vector<uint8_t>& desc, size_t align) {
    put(4, 4);
    put(desc.size(), 4);
    put(type, 4);
    for (char c : {'G', 'N', 'U', '\0'}) out.push_back(static_cast<uint8_t>(c));
    out.insert(out.end(), desc.begin(), desc.end());
    out.resize((out.size() + align - 1) / align * align, 0);
  };
  out.resize(notes, 0);
  note(5, std::vector<uint8_t>(12, 0xab), 8);  // NT_GNU_PROPERTY_TYPE_0
  note(3, id, id_align);                       // NT_GNU_BUILD_ID
  // A note section outside every segment, with another id: what a whole-file reading (sections
  // first) finds, and the kernel does not.
  const uint64_t decoy_at = out.size();
  note(3, std::vector<uint8_t>(id.size(), 0xdd), 4);
  const uint64_t decoy_size = out.size() - decoy_at;
  out.resize((out.size() + 7) / 8 * 8, 0);
  const uint64_t shoff = out.size();
  out.resize(out.size() + (is64 ? 64 : 40), 0);  // the null section
  put(0, 4);
  put(7, 4);     // SHT_NOTE
  put(2, word);  // SHF_ALLOC
  put(0, word);
  put(decoy_at, word);
  put(decoy_size, word);
  put(0, 4);
  put(0, 4);
  put(4, word);
  put(0, word);
  auto patch = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      out[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (big ? (n - 1 - i) * 8 : i * 8));
    }
  };
  patch(24 + 2 * static_cast<size_t>(word), shoff, word);  // e_shoff
  patch(36 + 3 * static_cast<size_t>(word), 2, 2);         // e_shnum
  return out;
}

TEST_F(ResolveFiles, EveryClassAndByteOrderIsReadBySegment) {
  std::vector<uint8_t> id(20);
  std::iota(id.begin(), id.end(), 0x31);
  for (bool is64 : {false, true}) {
    for (bool big : {false, true}) {
      for (bool id_after_property : {false, true}) {
        const std::vector<uint8_t> image = tiny_elf(is64, big, id_after_property, id);
        const std::string path = dir_ + "/tiny";
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(image.data()),
                   static_cast<std::streamsize>(image.size()));
        auto got = build_id_of_file(path);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(got->has_value())
            << "64-bit " << is64 << ", big-endian " << big << ", one segment " << id_after_property;
        EXPECT_EQ((*got)->hex(), "3132333435363738393a3b3c3d3e3f4041424344");
        // Read whole, sections come first: the decoy, which no segment holds.
        auto whole = build_id_of_elf(image);
        ASSERT_TRUE(whole.ok() && whole->has_value());
        EXPECT_EQ((*whole)->hex(), std::string(40, 'd'));
      }
    }
  }
}

constexpr int64_t kSecond = 1'000'000'000;

// A recording's facts, owned; the resolver reads a view of them.
struct Recording {
  std::string hostname;
  std::string osrelease;
  std::optional<uint64_t> kernel_text;
  std::optional<int64_t> started_at;
  std::optional<int64_t> ended_at;
  std::vector<format::BuildIdEntry> table;
  RecordingFacts view() const {
    return {hostname, osrelease, kernel_text, started_at, ended_at, table};
  }
  void add(const std::string& name, const std::string& hex, uint16_t misc = 2) {
    format::BuildIdEntry e;
    e.misc = misc;
    e.filename = name;
    auto id = BuildId::from_hex(hex);
    std::copy(id->bytes.begin(), id->bytes.end(), e.id.begin());
    e.id_size = id->size;
    table.push_back(e);
  }
};

// A recording that ends after every file the test makes.
int64_t a_minute_from_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
             .count() +
         60 * kSecond;
}

// Made on the fake host, in its present boot.
Recording this_boot(const testing::FakeHost& host) {
  return {host.name, host.release, host.text, std::nullopt, std::nullopt, {}};
}

MapQuery user_map(const std::string& path, bool with_inode = false) {
  MapQuery q{path, /*misc=*/2, with_inode, 0, 0, 0};
  if (with_inode) {
    struct stat st{};
    stat(path.c_str(), &st);
    q.maj = major(st.st_dev);
    q.min = minor(st.st_dev);
    q.ino = st.st_ino;
  }
  return q;
}

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
  EXPECT_EQ(proven.reason, kNoBuildIdInFile);
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

// perf's build-id cache, an entry for `path` per id, each added at `when` (seconds, epoch).
void add_cache_entry(const std::string& cache, const std::string& path, const std::string& id,
                     int64_t when) {
  const std::string dir = cache + path + "/" + id;
  fs::create_directories(dir);
  const struct timespec times[2] = {{when, 0}, {when, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, dir.c_str(), times, 0), 0);
}

TEST_F(ResolveFiles, ACacheEntryCountsOnlyWhenAddedWhileRecording) {
  const testing::FakeHost host;
  Recording rec = this_boot(host);
  rec.started_at = int64_t{1'700'000'000} * kSecond;
  rec.ended_at = int64_t{1'700'000'100} * kSecond;
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
  Recording rec = this_boot(host);
  const MapQuery q = user_map(dir_ + "/prog", true);
  // The file was replaced after the recording (a package upgrade): another inode, older mtime.
  fs::copy_file(dir_ + "/prog", dir_ + "/prog.new");
  fs::rename(dir_ + "/prog.new", dir_ + "/prog");
  struct stat st{};
  ASSERT_EQ(stat((dir_ + "/prog").c_str(), &st), 0);
  rec.started_at = (st.st_mtim.tv_sec + 100) * kSecond;
  rec.ended_at = (st.st_mtim.tv_sec + 200) * kSecond;
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

TEST(MapKind, ClassifiesMaps) {
  using format::classify;
  using format::MapKind;
  using format::module_name;
  EXPECT_EQ(classify("[kernel.kallsyms]_text", 1), MapKind::kKernel);
  EXPECT_EQ(classify("[guest.kernel.kallsyms.42]", 4), MapKind::kKernel);
  EXPECT_EQ(classify("/lib/modules/6.1.0/kernel/net/nf_tables.ko.xz", 1), MapKind::kModule);
  EXPECT_EQ(classify("[vdso]", 2), MapKind::kVdso);
  EXPECT_EQ(classify("//anon", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("[heap]", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("/memfd:jit (deleted)", 2), MapKind::kAnonymous);
  EXPECT_EQ(classify("/usr/lib/libc.so.6", 2), MapKind::kFile);
  EXPECT_EQ(module_name("/lib/modules/6.1.0/kernel/drivers/net/virtio-net.ko.zst"), "virtio_net");
  EXPECT_EQ(module_name("[qeth_l2]"), "qeth_l2");
}

}  // namespace
}  // namespace pdfix::resolve

namespace pdfix::resolve {
namespace {

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

TEST(ModuleArea, BoundsFromTheKernelSources) {
  // x86_64: MODULES_END, whichever MODULES_VADDR KASLR chose.
  EXPECT_EQ(module_area_end("x86_64", 0xffffffffa0000000), 0xffffffffff000000);
  EXPECT_EQ(module_area_end("x86_64", 0xffffffffc0000000), 0xffffffffff000000);
  // arm: PAGE_OFFSET above a 16 MiB module area; 0xc0000000 and 0x80000000 splits.
  EXPECT_EQ(module_area_end("armv7l", 0xbf000000), 0xc0000000);
  EXPECT_EQ(module_area_end("armv7l", 0x7f102000), 0x80000000);
  // s390x before KASLR: 2 GiB below 4 TiB (3-level) or 8 PiB (4-level).
  EXPECT_EQ(module_area_end("s390x", 0x3ff804d6990), uint64_t{1} << 42);
  EXPECT_EQ(module_area_end("s390x", 0x1fffff80002000), uint64_t{1} << 53);
  EXPECT_EQ(module_area_end("s390x", 0x3ff00000000), std::nullopt);
  // No bound that holds across versions: the next module and the kernel image bound these.
  EXPECT_EQ(module_area_end("aarch64", 0xffff800008000000), std::nullopt);
  EXPECT_EQ(module_area_end("ppc64le", 0xc008000000000000), std::nullopt);
}

}  // namespace
}  // namespace pdfix::resolve

namespace pdfix::resolve {
namespace {

// A recording's inodes as the whole-file survey would give them.
class Survey : public MappedInodes {
 public:
  PathInodes inodes;
  const PathInodes& all() const override { return inodes; }
};

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
  Survey survey;
  survey.inodes[{format::kHostMachine, host_map.filename}] = {
      {host_map.maj, host_map.min, host_map.ino}, {0, 77, 4242}};
  const std::string container_id(40, 'c');
  rec.add(host_map.filename, container_id);
  RecordingFacts facts = rec.view();
  facts.inodes = &survey;
  // The host's map is this host's file, whatever the table says of the path.
  Resolver r({}, host);
  EXPECT_EQ(hex_of(r.resolve(host_map, facts).id), expected_);
  // The only other file mapped there is proven to be another one: the table's id is the
  // container's.
  EXPECT_EQ(hex_of(r.resolve(container_map, facts).id), container_id);
  EXPECT_EQ(r.resolve(container_map, facts).source, "build-id table");
  // A third file at the path, proven nowhere: the table's id may be its.
  survey.inodes[{format::kHostMachine, host_map.filename}].insert({0, 78, 99});
  Resolver three({}, host);
  const Resolution& doubt = three.resolve(container_map, facts);
  EXPECT_FALSE(doubt.id.has_value());
  EXPECT_NE(doubt.reason.find("may be another file's"), std::string::npos) << doubt.reason;
  // The table's id is the host file's: perf read it at the path, for the container's map.
  Recording hosts = this_boot(host);
  hosts.add(host_map.filename, expected_);
  RecordingFacts host_facts = hosts.view();
  host_facts.inodes = &survey;
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
  Survey one;
  one.inodes[{format::kHostMachine, host_map.filename}] = {
      {host_map.maj, host_map.min, host_map.ino}};
  RecordingFacts facts = rec.view();
  facts.inodes = &one;
  Resolver r({}, host);
  EXPECT_NE(r.elsewhere(facts).find("kernel build"), std::string::npos);
  const Resolution& left = r.resolve(host_map, facts);
  EXPECT_FALSE(left.id.has_value());
  EXPECT_NE(left.reason.find("stays in the table"), std::string::npos) << left.reason;
  EXPECT_TRUE(r.unproven_table_ids().empty());
  Resolver rooted({.sysroot = "/"}, host);
  EXPECT_EQ(hex_of(rooted.resolve(host_map, facts).id), listed);
  Survey two = one;
  two.inodes[{format::kHostMachine, host_map.filename}].insert({other.maj, other.min, other.ino});
  facts.inodes = &two;
  Resolver doubt({.sysroot = "/"}, host);
  const Resolution& res = doubt.resolve(host_map, facts);
  EXPECT_FALSE(res.id.has_value());
  EXPECT_NE(res.reason.find("inodes prove nothing off the host"), std::string::npos) << res.reason;
}

TEST(Provenance, TheHostnameAloneDoesNotMakeARecordingThisBoots) {
  testing::FakeHost host;
  host.kernel_id = BuildId::from_hex(std::string(40, 'e'));
  host.booted_at = int64_t{2'000'000'000} * kSecond;
  Recording rec = this_boot(host);
  rec.started_at = *host.booted_at + kSecond;
  rec.add("[kernel.kallsyms]", std::string(40, 'e'), /*misc=*/1);
  const Resolver r({}, host);
  EXPECT_EQ(r.elsewhere(rec.view()), "");
  const auto elsewhere = [&](const Recording& other) { return r.elsewhere(other.view()); };
  Recording before = rec;
  before.started_at = *host.booted_at - kSecond;
  EXPECT_NE(elsewhere(before).find("before this host's last boot"), std::string::npos);
  Recording kaslr = rec;
  kaslr.kernel_text = *host.text + 0x200000;
  EXPECT_NE(elsewhere(kaslr).find("another boot"), std::string::npos);
  Recording release = rec;
  release.osrelease = "6.12.0-other";
  EXPECT_NE(elsewhere(release).find("6.12.0-other"), std::string::npos);
  Recording name = rec;
  name.hostname = "other";
  EXPECT_NE(elsewhere(name).find("recorded on other"), std::string::npos);
  Recording build = rec;
  build.table.clear();
  build.add("[kernel.kallsyms]", std::string(40, 'f'), /*misc=*/1);
  EXPECT_NE(elsewhere(build).find("kernel build " + std::string(40, 'f')), std::string::npos)
      << elsewhere(build);
}

}  // namespace
}  // namespace pdfix::resolve
