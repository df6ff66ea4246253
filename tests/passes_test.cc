// Each repair pass over recordings the fixture builder makes, in every shape (both byte orders,
// file and pipe, plain and zstd), with the host faked: what the pass must change, it changes, and
// nothing else.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "fixture/fake_host.h"
#include "fixture/pass_test.h"
#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "fixture/shapes.h"
#include "format/feature.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/records.h"
#include "inspect/check.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"
#include "passes/repair.h"
#include "resolve/resolver.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

// What inject and check say of a file with no build-id of its own (Go's default).
constexpr char kNoBuildIdInFile[] =
    "no GNU build-id in the file (Go writes none by default; newer Go: -ldflags=-B=gobuildid)";

using testing::Bytes;
using testing::kAppId;
using testing::kKernelId;
using testing::kModules;
using testing::kNfId;
using testing::kText;
using testing::OptionValues;
using testing::PassTest;
using testing::PerfDataBuilder;
using testing::read_output;
using testing::shapes;

// Kernel, a module and a program, recorded on the fake host in its present boot: the kernel's
// id is in the table, the module's only in the host's notes, the program's only given by the user.
Bytes injectable(PassTest& t, PerfDataBuilder b) {
  t.table_entry(b, '1', "[kernel.kallsyms]");
  t.start_data(b);
  b.comm(10, 10, "app")
      .mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x5000, 0, "[nf_tables]", format::kCpuModeKernel)
      .mmap(10, 0x400000, 0x1000, 0, "/opt/gone/app")
      .mmap(10, 0x7f0000000000ULL, 0x1000, 0, "//anon")
      .sample(0x400010, 10, 10, 1000)
      .finished_round();
  return b.build();
}

TEST_P(PassTest, InjectGivesEveryProvenIdAndAddsItToTheTable) {
  host_.module_ids["nf_tables"] = *format::BuildId::from_hex(kNfId);
  const Bytes input = injectable(*this, builder());
  auto out = read_output(run("inject", input, {{"--known-build-ids", "/opt/gone/app=" + kAppId}}));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 4U);
  EXPECT_EQ(out->maps[0].id, kKernelId);  // from the table
  EXPECT_EQ(out->maps[1].id, kNfId);      // the host's /sys/module notes, same boot
  EXPECT_EQ(out->maps[2].id, kAppId);     // --known-build-ids
  EXPECT_EQ(out->maps[3].id, "");         // anonymous
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(out->maps[i].fields.is_mmap2);
    EXPECT_EQ(out->maps[i].fields.start, std::vector<uint64_t>({kText, kModules, 0x400000})[i]);
  }
  EXPECT_EQ(report().getInteger("upgraded"), 3);
  EXPECT_EQ(report().getInteger("table_entries_added"), 2);
  // The table (a stream: HEADER_BUILD_ID records) gains the two ids it lacked, once each.
  std::map<std::string, std::string> table;
  for (const auto& e : out->table) table[e.filename] = format::build_id_hex(e);
  EXPECT_EQ(table["[nf_tables]"], kNfId);
  EXPECT_EQ(table["/opt/gone/app"], kAppId);
  EXPECT_EQ(out->table.size(), 3U);
  if (GetParam().pipe) {
    // Ahead of the map that needs it.
    const auto first_id = std::find(out->types.begin(), out->types.end(),
                                    static_cast<uint32_t>(format::kHeaderBuildId));
    const auto module_map = std::find(first_id, out->types.end(), 1U);
    EXPECT_LT(first_id - out->types.begin(), module_map - out->types.begin());
  }
}

TEST_P(PassTest, InjectWritesAMapTheKernelMarkedWithAnotherSessionsBitAsTheDevAndInodeItHolds) {
  // MMAP_BUILD_ID set over dev/ino (the kernel's, from another session's build-id event): one map
  // proven (here by the user's id), one left alone; neither is written with the bit over dev/ino.
  PerfDataBuilder b = builder();
  start_data(b);
  b.comm(10, 10, "app")
      .mmap2(10, 0x400000, 0x1000, 0, "/opt/gone/app", 254, 0, 13894821, 2 | 0x4000)
      .mmap2(10, 0x500000, 0x1000, 0, "/opt/gone/lib", 254, 0, 13894822, 2 | 0x4000)
      .sample(0x400010, 10, 10, 1000)
      .finished_round();
  const std::string path =
      run("inject", b.build(), {{"--known-build-ids", "/opt/gone/app=" + kAppId}});
  auto out = read_output(path);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 2U);
  EXPECT_EQ(out->maps[0].id, kAppId);
  EXPECT_EQ(out->maps[1].id, "");
  EXPECT_EQ(out->maps[1].fields.maj, 254U);
  EXPECT_EQ(out->maps[1].fields.ino, 13894822U);
  EXPECT_EQ(report().getInteger("kernel_build_id_bits_cleared"), 2);
  auto raw = testing::read_back(path);
  ASSERT_TRUE(raw.ok()) << raw.status();
  std::vector<uint16_t> misc;
  for (size_t i = 0; i < raw->types.size(); ++i) {
    if (raw->types[i] == format::kMmap2) misc.push_back(raw->endian.u16(raw->bytes[i].data() + 4));
  }
  ASSERT_EQ(misc.size(), 2U);
  EXPECT_NE(misc[0] & format::kMiscMmapBuildId, 0);  // now carrying the app's id
  EXPECT_EQ(misc[1] & format::kMiscMmapBuildId, 0);  // dev/ino, as it holds
}

TEST_P(PassTest, NoMapOfMemoryWithoutAFileLeavesCarryingAnId) {
  // Whatever the records say (a kernel's, a tool's): anonymous memory, the heap, the stack, a memfd
  // and SysV memory have no file and so no build-id. A file's map keeps the id it carries.
  const std::vector<std::string> no_file = {"//anon", "[heap]", "[stack]", "/memfd:jit (deleted)",
                                            "/SYSV00000000 (deleted)"};
  PerfDataBuilder b = builder();
  start_data(b);
  b.comm(10, 10, "app");
  uint64_t start = 0x700000;
  for (const std::string& name : no_file) {
    b.mmap2_build_id(10, start += 0x10000, 0x1000, 0, name, testing::id_bytes('3'));
  }
  b.mmap2_build_id(10, 0x400000, 0x1000, 0, "/opt/gone/app", testing::id_bytes('3'))
      .sample(0x400010, 10, 10, 1000)
      .finished_round();
  for (const std::string verb : {"inject", "repair-build-ids", "fix"}) {
    auto out = read_output(run(verb, b.build()));
    ASSERT_TRUE(out.ok()) << verb << ": " << out.status();
    ASSERT_EQ(out->maps.size(), no_file.size() + 1) << verb;
    for (size_t i = 0; i < no_file.size(); ++i) {
      EXPECT_EQ(out->maps[i].filename, no_file[i]) << verb;
      EXPECT_EQ(out->maps[i].id, "") << verb << " " << no_file[i];
      EXPECT_TRUE(out->maps[i].fields.is_mmap2) << verb << " " << no_file[i];
      EXPECT_EQ(out->maps[i].fields.ino, 0U) << verb << " " << no_file[i];
    }
    EXPECT_EQ(out->maps.back().id, kAppId) << verb;
  }
  // Under fix, repair-build-ids removed them, each listed, before inject saw them.
  EXPECT_EQ(report().getInteger("ids_without_file_removed"), 0);
  EXPECT_EQ(report_of("repair-build-ids").getArray("maps")->size(), no_file.size());
  run("inject", b.build());
  EXPECT_EQ(report().getInteger("ids_without_file_removed"), 5);
}

TEST_P(PassTest, InjectTakesNothingFromAHostOfAnotherBoot) {
  host_.module_ids["nf_tables"] = *format::BuildId::from_hex(kNfId);
  const Bytes input = injectable(*this, builder());
  host_.text = kText + 0x200000;  // rebooted since: KASLR moved the kernel
  auto out = read_output(run("inject", input));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->maps[0].id, kKernelId);  // the table still says
  EXPECT_EQ(out->maps[1].id, "");
  EXPECT_EQ(out->maps[2].id, "");
  EXPECT_EQ(report().getInteger("upgraded"), 1);
}

TEST_P(PassTest, InjectTakesKnownIdsFromAFileInEveryForm) {
  // No table, another boot: only what the user says gives ids, by the names README gives: the
  // kernel's tag, a module's [name] (its map names the .ko path), and a path.
  host_.text = kText + 0x200000;
  PerfDataBuilder b = builder();
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x5000, 0, "/lib/modules/6.1.0-test/kernel/nf_tables.ko.xz",
            format::kCpuModeKernel)
      .mmap(10, 0x400000, 0x1000, 0, "/opt/gone/app")
      .mmap(10, 0x500000, 0x1000, 0, "/opt/gone/unnamed")
      .sample(0x400010, 10, 10, 1000);
  const std::string text =
      "[kernel.kallsyms]=" + kKernelId + "\n  [nf-tables]=" + kNfId + "\n\n/opt/gone/app=" + kAppId;
  const std::string list = testing::write_temp(Bytes(text.begin(), text.end()), "known.txt");
  auto out = read_output(run("inject", b.build(), {{"--known-build-ids", "@" + list}}));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 4U);
  EXPECT_EQ(out->maps[0].id, kKernelId);
  EXPECT_EQ(out->maps[1].id, kNfId);  // module names compare as the kernel does: '-' is '_'
  EXPECT_EQ(out->maps[2].id, kAppId);
  EXPECT_EQ(out->maps[3].id, "");
  EXPECT_EQ(report().getInteger("upgraded"), 3);

  // What is not a list is an error, not an empty list. (The options write into their kind's
  // config: the kinds must outlive the setters.)
  OptionValues values;
  const auto kinds = passes::repair_kinds();
  for (const auto& k : kinds) {
    if (k->verb() == "inject") k->declare(values);
  }
  EXPECT_EQ(values.set("--known-build-ids", "@" + list + ".missing").code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(values.set("--known-build-ids", "/opt/gone/app").ok());
  EXPECT_FALSE(values.set("--known-build-ids", "/opt/gone/app=xyz").ok());
}

TEST_P(PassTest, AGuestsMapsTakeOnlyWhatTheRecordingSaysOfTheGuest) {
  // A guest (perf kvm) runs a module and a program of the host's names; this host's notes and
  // files are the host's, not the guest's. The guest's own table entries prove its maps.
  constexpr uint32_t kGuest = 42;
  host_.kernel_id = *format::BuildId::from_hex(kKernelId);
  host_.module_ids["nf_tables"] = *format::BuildId::from_hex(kNfId);
  PerfDataBuilder b = builder();
  table_entry(b, '4', "[guest.kernel.kallsyms]", format::kCpuModeGuestKernel, kGuest);
  table_entry(b, '5', "/usr/bin/guest-only", format::kCpuModeGuestUser, kGuest);
  table_entry(b, '6', "[kvm]");  // the host's module, of a name the guest has too
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x5000, 0, "[nf_tables]", format::kCpuModeKernel)
      .mmap(kGuest, kText, 0x1000000, kText, "[guest.kernel.kallsyms]", format::kCpuModeGuestKernel)
      .mmap(kGuest, kModules, 0x5000, 0, "[nf_tables]", format::kCpuModeGuestKernel)
      .mmap(kGuest, 0x400000, 0x1000, 0, "/usr/bin/guest-only", format::kCpuModeGuestUser)
      .mmap(-1, 0x600000, 0x1000, 0, "/usr/bin/guest-only")
      .mmap(kGuest, kModules + 0x10000, 0x5000, 0, "[kvm]", format::kCpuModeGuestKernel)
      .sample(0x400010, 10, 10, 1000);
  auto out =
      read_output(run("inject", b.build(), {{"--known-build-ids", "[nf_tables]=" + kAppId}}));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 7U);
  EXPECT_EQ(out->maps[0].id, kKernelId);             // the host: this boot's notes
  EXPECT_EQ(out->maps[1].id, kAppId);                // the host's module, as the user said
  EXPECT_EQ(out->maps[2].id, std::string(40, '4'));  // the guest's kernel entry
  EXPECT_EQ(out->maps[3].id, "");  // neither the host's notes nor the user's host module
  EXPECT_EQ(out->maps[4].id, std::string(40, '5'));  // the guest's own entry
  EXPECT_EQ(out->maps[5].id, "");  // the guest's entry says nothing of the host's file
  EXPECT_EQ(out->maps[6].id, "");  // nor the host's module entry of the guest's module
  EXPECT_EQ(out->maps[2].fields.pid, kGuest);
  EXPECT_EQ(out->maps[2].fields.misc & format::kCpuModeMask, format::kCpuModeGuestKernel);
}

TEST_P(PassTest, FixModuleSizesEndsARunawayModuleAtItsNeighbour) {
  PerfDataBuilder b = builder();
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x8000, 0, "[a]", format::kCpuModeKernel)
      .mmap(-1, kModules + 0x8000, 0 - (kModules + 0x8000), 0, "[b]", format::kCpuModeKernel)
      .mmap(-1, kModules + 0x20000, 0x3000, 0, "[c]", format::kCpuModeKernel)
      .sample(kModules + 0x10, 10, 10, 1000, format::kCpuModeKernel);
  auto out = read_output(run("fix-module-sizes", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 4U);
  EXPECT_EQ(out->maps[1].fields.len, 0x8000U);
  EXPECT_EQ(out->maps[2].fields.len, 0x18000U);  // up to [c]
  EXPECT_EQ(out->maps[3].fields.len, 0x3000U);
  EXPECT_EQ(report().getArray("changed")->size(), 1U);
}

TEST_P(PassTest, FixModuleSizesKnowsPerfsOldBugWithoutAnArchFeature) {
  // Pipe mode of old perf wrote no ARCH: the x86_64 kernel map's address tells it.
  const uint64_t last = 0xffffffffa0271000ULL;
  PerfDataBuilder b(GetParam().order);
  if (GetParam().pipe) b.pipe_mode();
  // Big-endian readers need HOSTNAME to tell how the feature bitmap was written.
  b.attr({}).string_feature(format::kFeatHostname, host_.name);
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, last, UINT64_MAX - last, 0, "[uinput]", format::kCpuModeKernel);
  auto out = read_output(run("fix-module-sizes", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->maps[1].fields.len, 0xffffffffff000000ULL - last);
  const auto* changed = report().getArray("changed");
  ASSERT_EQ(changed->size(), 1U);
  EXPECT_NE(changed->front().getAsObject()->getString("problem")->find("no ARCH feature"),
            std::string::npos);

  // A kernel map that tells no architecture: the signature alone is known, and nothing says
  // where the module ends.
  PerfDataBuilder unknown(GetParam().order);
  if (GetParam().pipe) unknown.pipe_mode();
  unknown.attr({}).string_feature(format::kFeatHostname, host_.name);
  start_data(unknown);
  unknown.mmap(-1, 0x1000000, 0x100000, 0x1000000, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, 0x3000000, UINT64_MAX - 0x3000000, 0, "[m]", format::kCpuModeKernel);
  auto left = read_output(run("fix-module-sizes", unknown.build()));
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(left->maps[1].fields.len, UINT64_MAX - 0x3000000);
  const auto* unresolved = report().getArray("unresolved");
  ASSERT_EQ(unresolved->size(), 1U);
  EXPECT_EQ(*unresolved->front().getAsObject()->getString("problem"),
            "runs to the top of the address space");
}

TEST_P(PassTest, FixModuleSizesTakesNoArm64LayoutForX86WithoutAnArchFeature) {
  // Addresses of the arm64 VM of corpora/arm64: the modules below the kernel image, which the
  // last one cannot run past; no x86_64 module area applies.
  const uint64_t image = 0xffffbe2a28810000ULL, last = 0xffffbe2a0be43000ULL;
  PerfDataBuilder b(GetParam().order);
  if (GetParam().pipe) b.pipe_mode();
  b.attr({}).string_feature(format::kFeatHostname, host_.name);
  start_data(b);
  b.mmap(-1, image, 0x1000000, image, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, last, 0 - last, 0, "[9p]", format::kCpuModeKernel);
  auto out = read_output(run("fix-module-sizes", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->maps[1].fields.len, image - last);
  const auto* changed = report().getArray("changed");
  ASSERT_EQ(changed->size(), 1U);
  const std::string problem(*changed->front().getAsObject()->getString("problem"));
  EXPECT_EQ(problem.find("x86_64"), std::string::npos) << problem;
}

TEST_P(PassTest, TagKernelNamesTheKernelEntryAndGivesTheMapItsId) {
  PerfDataBuilder b = builder();
  // A module first and the kernel under a vmlinux path: perf would take [foo] for the kernel.
  table_entry(b, '2', "[foo]");
  table_entry(b, '1', "/boot/vmlinux-6.1");
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x5000, 0, "[foo]", format::kCpuModeKernel)
      .sample(kText + 0x10, 10, 10, 1000, format::kCpuModeKernel);
  auto out = read_output(run("tag-kernel", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->maps[0].id, kKernelId);
  EXPECT_EQ(out->maps[1].id, "");
  std::vector<std::string> names;
  for (const auto& e : out->table) names.push_back(e.filename);
  // First, the vmlinux entry kept (in a stream: a HEADER_BUILD_ID record ahead of the others).
  EXPECT_EQ(names, (std::vector<std::string>{"[kernel.kallsyms]", "[foo]", "/boot/vmlinux-6.1"}));
  EXPECT_EQ(format::build_id_hex(out->table[0]), kKernelId);
}

TEST_P(PassTest, TagKernelMovesAKernelEntryNamedRightToTheFrontOnce) {
  PerfDataBuilder b = builder();
  table_entry(b, '2', "[foo]");
  table_entry(b, '1', "[kernel.kallsyms]");
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x5000, 0, "[foo]", format::kCpuModeKernel);
  auto out = read_output(run("tag-kernel", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> names;
  for (const auto& e : out->table) names.push_back(e.filename);
  // A stream's records stay where they are (each names its DSO as it goes by); a file's table
  // gets the kernel's entry first, moved, not copied.
  if (GetParam().pipe) {
    EXPECT_EQ(names, (std::vector<std::string>{"[foo]", "[kernel.kallsyms]"}));
    return;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"[kernel.kallsyms]", "[foo]"}));
  ASSERT_FALSE(out->table.empty());
  EXPECT_EQ(format::build_id_hex(out->table[0]), kKernelId);
}

TEST_P(PassTest, CompressedDataIsCopiedWhenNothingInsideChanges) {
  // Nothing to inject: the maps carry no file the pass can prove.
  PerfDataBuilder b = builder();
  start_data(b);
  b.mmap(10, 0x400000, 0x1000, 0, "/opt/gone/app").sample(0x400010, 10, 10, 1000);
  const Bytes input = b.build();
  auto before = read_output(testing::write_temp(input));
  auto out = read_output(run("inject", input));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(out->types, before->types);
  EXPECT_EQ(report().getInteger("upgraded"), 0);
  // A stream cannot be read twice to find that out first: its data is compressed anew.
  if (!GetParam().pipe) {
    EXPECT_EQ(out->compressed, before->compressed);
  }
  EXPECT_EQ(out->compressed.empty(), GetParam().compressed == 0);
}

// /usr/bin/true without its build-id note at `path`, written a minute ago (before the recording).
void copy_without_build_id(const std::string& path, struct stat& st) {
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id /usr/bin/true " + path +
                         " && touch -d '1 minute ago' " + path)
                            .c_str()),
            0);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
}

// Two files at one path, the host's without a build-id and another one (a container's): each
// map's own reason is told, whichever comes first, and check does not call both kept by path.
TEST_P(PassTest, InjectTellsEachFileAtOnePathWhyItHasNoId) {
  const std::string path = ::testing::TempDir() + "/pdfix-noid-" + std::to_string(getpid());
  struct stat st{};
  ASSERT_NO_FATAL_FAILURE(copy_without_build_id(path, st));
  const std::set<std::string> both{
      std::string(kNoBuildIdInFile),
      "another file than this host's at that path (a container or chroot?): give its root or "
      "layers with --search"};
  for (const bool host_first : {true, false}) {
    // Without sample_id_all the maps carry no time: they apply from the start.
    PerfDataBuilder b = builder({.sample_id_all = false});
    start_data(b);
    const uint32_t first = host_first ? 10 : 11;
    for (const uint32_t pid : {first, 21 - first}) {
      if (pid == 10) {
        b.mmap2(10, 0x400000, 0x1000, 0, path, major(st.st_dev), minor(st.st_dev), st.st_ino);
      } else {
        b.mmap2(11, 0x400000, 0x1000, 0, path, 0, 4243, st.st_ino + 1);
      }
    }
    b.sample(0x400010, 10, 10, 1000).sample(0x400010, 11, 11, 1001).finished_round();
    const Bytes input = b.build();
    run("inject", input);
    std::set<std::string> reasons;
    for (const llvm::json::Value& m : *report().getArray("maps")) {
      const llvm::json::Object& o = *m.getAsObject();
      if (o.getString("filename") == path && o.getString("outcome") == "left alone") {
        reasons.insert(o.getString("detail")->str());
      }
    }
    EXPECT_EQ(reasons, both) << (host_first ? "host's map first" : "the other first");
    const std::vector<std::string> notes = check_notes(testing::write_temp(input));
    EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [&](const std::string& n) {
      return n.starts_with(path +
                           ": samples hit maps of it that carry no build-id, and fix "
                           "proves none");
    })) << absl::StrJoin(notes, "\n");
  }
  std::remove(path.c_str());
}

// A file proven to be the mapped one that has no build-id (Go's default): check says fix keeps it
// by path, and the inject report says why it has no id.
TEST_P(PassTest, CheckSaysAProvenFileWithoutAnIdIsKeptByPath) {
  const std::string path = ::testing::TempDir() + "/pdfix-kept-" + std::to_string(getpid());
  struct stat st{};
  ASSERT_NO_FATAL_FAILURE(copy_without_build_id(path, st));
  PerfDataBuilder b = builder({.sample_id_all = false});
  start_data(b);
  b.mmap2(10, 0x400000, 0x1000, 0, path, major(st.st_dev), minor(st.st_dev), st.st_ino);
  b.sample(0x400010, 10, 10, 1000).finished_round();
  const std::vector<std::string> notes = check_notes(testing::write_temp(b.build()));
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [&](const std::string& n) {
    return n.starts_with(path + ": " + kNoBuildIdInFile) &&
           n.find("fix --archive/--store keeps it by path and content") != std::string::npos;
  })) << absl::StrJoin(notes, "\n");
  std::remove(path.c_str());
}

// The kernel and two modules as perf 6.17 wrote them with --buildid-mmap: b.ko carries a.ko's id.
INSTANTIATE_TEST_SUITE_P(Shapes, PassTest, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace pdfix
