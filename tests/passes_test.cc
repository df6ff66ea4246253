// Each repair pass over recordings the fixture builder makes, in every shape (both byte orders,
// file and pipe, plain and zstd), with the host faked: what the pass must change, it changes, and
// nothing else.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "fixture/shapes.h"
#include "format/feature.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/records.h"
#include "inspect/check.h"
#include "io/input.h"
#include "passes/repair.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;
using testing::Shape;
using testing::shapes;

constexpr uint64_t kText = 0xffffffff81000000ULL;
constexpr uint64_t kModules = 0xffffffffc0000000ULL;
const std::string kKernelId(40, '1');
const std::string kNfId(40, '2');
const std::string kAppId(40, '3');

Bytes id_bytes(char c) { return Bytes(20, static_cast<uint8_t>((c - '0') * 0x11)); }

// Sets options the way the command line would, by name.
class OptionValues : public passes::Options {
 public:
  void value(const std::string& name, const std::string& /*value_name*/,
             const std::string& /*help*/,
             std::function<absl::Status(const std::string&)> set) override {
    setters_[name] = std::move(set);
  }
  void directory(const std::string& name, const std::string& /*help*/,
                 std::string& target) override {
    // Passes that declare the same directory share its value, as on the command line.
    auto before = setters_[name];
    setters_[name] = [&target, before](const std::string& v) {
      target = v;
      return before ? before(v) : absl::OkStatus();
    };
  }
  absl::Status set(const std::string& name, const std::string& value) {
    return setters_.at(name)(value);
  }

 private:
  std::map<std::string, std::function<absl::Status(const std::string&)>> setters_;
};

// The output as the reader gives it back, its maps decoded.
struct OutMap {
  format::MmapRecord fields;  // without its filename view

  std::string filename;
  std::string id;  // hex, empty without one
};
struct Output {
  std::vector<OutMap> maps;
  std::vector<uint32_t> types;  // of every record, compressed containers left out
  std::vector<format::BuildIdEntry> table;
  std::vector<Bytes> compressed;  // the compressed containers' bytes
};

absl::StatusOr<Output> read_output(const std::string& path) {
  auto read = testing::read_back(path);
  if (!read.ok()) return read.status();
  Output out{{}, read->types, read->table, read->compressed};
  for (size_t i = 0; i < read->types.size(); ++i) {
    if (read->types[i] != format::kMmap && read->types[i] != format::kMmap2) continue;
    auto m = format::decode_mmap(read->bytes[i], read->endian, read->trailers[i], 0);
    if (!m.ok()) return m.status();
    const std::string filename(m->filename);
    m->filename = {};  // it viewed bytes this function does not keep
    out.maps.push_back(
        {*m, filename,
         m->has_build_id()
             ? format::BuildId::from_bytes({m->build_id.data(), m->build_id_size})->hex()
             : ""});
  }
  return out;
}

class PassTest : public ::testing::TestWithParam<Shape> {
 public:
  PerfDataBuilder builder() const {
    const Shape& s = GetParam();
    PerfDataBuilder b(s.order);
    if (s.pipe) b.pipe_mode();
    b.attr({});
    b.string_feature(format::kFeatHostname, host_.name);
    b.string_feature(format::kFeatOsRelease, host_.release);
    b.string_feature(format::kFeatArch, "x86_64");
    return b;
  }
  // A build-id table entry: in the table of a file, a HEADER_BUILD_ID record in a stream.
  void table_entry(PerfDataBuilder& b, char id, const std::string& name,
                   uint16_t mode = format::kCpuModeKernel, int32_t pid = -1) const {
    const uint16_t misc = 0x8000 | mode;
    if (!GetParam().pipe) {
      b.build_id_entry(misc, pid, id_bytes(id), name);
      return;
    }
    Bytes r = format::encode_build_id_entry(format::kHeaderBuildId, misc, pid, id_bytes(id), name,
                                            b.endian());
    b.raw_record(format::kHeaderBuildId, misc, Bytes(r.begin() + 8, r.end()));
  }
  void start_data(PerfDataBuilder& b) const {
    if (GetParam().compressed != 0) b.compress(GetParam().compressed, 64);
  }
  // Runs the pass named `verb` (with `options` set) over `input`; the output's path.
  std::string run(const std::string& verb, const Bytes& input,
                  const std::map<std::string, std::string>& options = {}) {
    auto kinds = passes::repair_kinds();
    std::vector<passes::RepairKind*> chosen;  // "fix": all of them
    for (auto& k : kinds) {
      if (k->verb() == verb || (verb == "fix" && k->fix_switch().empty())) {
        chosen.push_back(k.get());
      }
    }
    EXPECT_FALSE(chosen.empty()) << verb;
    OptionValues values;
    for (passes::RepairKind* k : chosen) k->declare(values);
    for (const auto& [name, value] : options) EXPECT_TRUE(values.set(name, value).ok()) << name;
    const std::string in_path = testing::write_temp(input);
    auto in = io::open_input(in_path);
    EXPECT_TRUE(in.ok());
    const passes::Common common{.host = &host_};
    auto chain = transform::run_pipeline(*in, in_path + ".out",
                                         [&] {
                                           transform::PassChain c;
                                           for (passes::RepairKind* k : chosen)
                                             c.push_back(k->make(common));
                                           return c;
                                         },
                                         {});
    EXPECT_TRUE(chain.ok()) << chain.status();
    if (chain.ok()) {
      // The pass's report; under fix, inject's.
      for (const auto& pass : *chain) {
        if (chosen.size() == 1 || pass->name() == "inject-build-ids") {
          report_ = llvm::json::Value(dynamic_cast<const passes::Repair&>(*pass).report_json());
        }
      }
    }
    return in_path + ".out";
  }
  const llvm::json::Object& report() const { return *report_.getAsObject(); }
  // `pdfix check` of the recording at `path`: the errors, each as "<fixing verb>: <what>".
  std::vector<std::string> check_errors(const std::string& path) {
    auto kinds = passes::repair_kinds();
    const passes::Common common{.host = &host_};
    transform::PassChain chain;
    std::vector<std::string> fixers;
    for (auto& k : kinds) {
      if (!k->fix_switch().empty()) continue;  // as check does
      chain.push_back(k->make(common));
      fixers.push_back(k->verb());
    }
    auto in = io::open_input(path);
    EXPECT_TRUE(in.ok());
    if (!in.ok()) return {"unreadable"};
    auto report = inspect::check(*in, std::move(chain), fixers);
    EXPECT_TRUE(report.ok()) << report.status();
    if (!report.ok()) return {"unreadable"};
    std::vector<std::string> errors;
    for (const inspect::Finding& f : report->findings) {
      if (f.severity == inspect::Finding::Severity::kError) {
        errors.push_back(f.fixed_by + ": " + f.what);
      }
    }
    return errors;
  }

 protected:
  testing::FakeHost host_;
  llvm::json::Value report_ = nullptr;
};

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

// The kernel and two modules as perf 6.17 wrote them with --buildid-mmap: b.ko carries a.ko's id.
PerfDataBuilder& poisoned_modules(PerfDataBuilder& b) {
  return b
      .mmap2_build_id(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", id_bytes('1'),
                      format::kCpuModeKernel)
      .mmap2_build_id(-1, kModules, 0x5000, 0, "/lib/modules/6.1/a.ko", id_bytes('2'),
                      format::kCpuModeKernel)
      .mmap2_build_id(-1, kModules + 0x5000, 0x5000, 0, "/lib/modules/6.1/b.ko", id_bytes('2'),
                      format::kCpuModeKernel);
}

TEST_P(PassTest, RepairReplacesOrRemovesAPoisonedModuleId) {
  // perf 6.17: b.ko and c.ko carry a.ko's id. The host's notes prove b.ko's; nothing proves c.ko's.
  host_.module_ids["b"] = *format::BuildId::from_hex(kAppId);
  PerfDataBuilder b = builder();
  start_data(b);
  poisoned_modules(b)
      .mmap2_build_id(-1, kModules + 0xa000, 0x5000, 0, "/lib/modules/6.1/c.ko", id_bytes('2'),
                      format::kCpuModeKernel)
      .sample(0x400010, 10, 10, 1000);
  auto out = read_output(run("repair-build-ids", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->maps.size(), 4U);
  EXPECT_EQ(out->maps[0].id, kKernelId);  // one file's id: nothing suspect
  EXPECT_EQ(out->maps[1].id, "");         // shared, and nothing proves a.ko's either
  EXPECT_EQ(out->maps[2].id, kAppId);     // the running kernel's notes, same boot
  EXPECT_EQ(out->maps[3].id, "");
  for (const OutMap& m : out->maps) EXPECT_TRUE(m.fields.is_mmap2) << m.filename;
  EXPECT_EQ(out->maps[3].fields.start, kModules + 0xa000);
  EXPECT_EQ(out->maps[3].fields.len, 0x5000U);
  EXPECT_EQ(report().getArray("maps")->size(), 3U);
  // No two maps of different files share an id any more, and a second run changes nothing.
  const Bytes once = testing::read_file(run("repair-build-ids", b.build()));
  EXPECT_EQ(testing::read_file(run("repair-build-ids", once)), once);
}

TEST_P(PassTest, RepairTakesTheTablesWordOverARecordsId) {
  PerfDataBuilder b = builder();
  table_entry(b, '3', "/lib/modules/6.1/a.ko");
  start_data(b);
  b.mmap2_build_id(-1, kModules, 0x5000, 0, "/lib/modules/6.1/a.ko", id_bytes('2'),
                   format::kCpuModeKernel)
      .mmap2_build_id(10, 0x400000, 0x1000, 0, "/opt/gone/app", id_bytes('2'))
      .sample(0x400010, 10, 10, 1000);
  auto out = read_output(run("repair-build-ids", b.build()));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->maps[0].id, kAppId);
  EXPECT_EQ(out->maps[1].id, kNfId);  // a user map the table does not name: nothing says otherwise
}

TEST_P(PassTest, FixListsTheIdsTheRecordsCarryButNotAPoisonedOne) {
  // perf record --buildid-mmap writes no table; perf 6.17 gave the second module the first's id,
  // which the running kernel's notes (same boot) prove a.ko's.
  host_.module_ids["a"] = *format::BuildId::from_hex(kNfId);
  PerfDataBuilder b = builder();
  start_data(b);
  poisoned_modules(b)
      .mmap2_build_id(10, 0x400000, 0x1000, 0, "/opt/gone/app", id_bytes('3'))
      .sample(0x400010, 10, 10, 1000);
  const Bytes input = b.build();
  const std::vector<std::pair<std::string, std::string>> expected{{"[kernel.kallsyms]", kKernelId},
                                                                  {"/lib/modules/6.1/a.ko", kNfId},
                                                                  {"/opt/gone/app", kAppId}};
  auto table_of = [](const Output& o) {
    std::vector<std::pair<std::string, std::string>> table;
    for (const auto& e : o.table) table.emplace_back(e.filename, format::build_id_hex(e));
    return table;
  };

  // inject alone lists the ids the records carry, but not one another file's map carried first.
  auto injected = read_output(run("inject", input));
  ASSERT_TRUE(injected.ok()) << injected.status();
  EXPECT_EQ(table_of(*injected), (std::vector<std::pair<std::string, std::string>>{
                                     {"[kernel.kallsyms]", kKernelId}, expected[1], expected[2]}));
  EXPECT_EQ(report().getInteger("table_entries_from_records"), 3);
  EXPECT_EQ(report().getInteger("table_entries_contradicted"), 1);

  // fix repairs first: b.ko loses the id nothing proves, and the kernel is tagged first.
  auto out = read_output(run("fix", input));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(table_of(*out), expected);
  EXPECT_EQ(report().getInteger("table_entries_from_records"), 2);
  EXPECT_EQ(report().getInteger("table_entries_contradicted"), 0);
  ASSERT_EQ(out->maps.size(), 4U);
  EXPECT_EQ(out->maps[1].id, kNfId);
  EXPECT_EQ(out->maps[2].id, "");

  // Fixed once is fixed: a second run writes the same bytes.
  const Bytes fixed = testing::read_file(run("fix", input));
  EXPECT_EQ(testing::read_file(run("fix", fixed)), fixed);
}

// `check` reports each wrong thing fix repairs, named by the verb that repairs it, and nothing
// once fix has run.
TEST_P(PassTest, CheckFindsWhatFixRepairsAndNothingAfterIt) {
  host_.module_ids["a"] = *format::BuildId::from_hex(kNfId);
  PerfDataBuilder b = builder();
  // The kernel filed under a vmlinux path, behind a module perf would take for the kernel.
  table_entry(b, '4', "[foo]");
  table_entry(b, '1', "/boot/vmlinux-6.1");
  start_data(b);
  poisoned_modules(b)
      .mmap(-1, kModules + 0xa000, 0 - (kModules + 0xa000), 0, "[foo]", format::kCpuModeKernel)
      .mmap(-1, kModules + 0x20000, 0x3000, 0, "[c]", format::kCpuModeKernel)
      .sample(kModules + 0x10, 10, 10, 1000, format::kCpuModeKernel);
  const std::string in = testing::write_temp(b.build());
  const std::vector<std::string> found = check_errors(in);
  auto has = [&](const std::string& verb, const std::string& text) {
    return std::count_if(found.begin(), found.end(), [&](const std::string& e) {
             return e.starts_with(verb + ": ") && e.find(text) != std::string::npos;
           }) == 1;
  };
  EXPECT_TRUE(has("repair-build-ids", "/lib/modules/6.1/b.ko carries build-id " + kNfId));
  EXPECT_TRUE(has("fix-module-sizes", "[foo] mapped at"));
  EXPECT_TRUE(has("tag-kernel", "filed under /boot/vmlinux-6.1"));
  EXPECT_EQ(found.size(), 3U) << ::testing::PrintToString(found);
  EXPECT_EQ(check_errors(run("fix", testing::read_file(in))), std::vector<std::string>{});
}

// fix --for a reader before 5.12: inject lists the ids the maps carry, compat then takes them out
// of the maps; the table has each once.
TEST_P(PassTest, FixForAnOldReaderListsEachIdOnceAndNoMapCarriesOne) {
  PerfDataBuilder b = builder();
  start_data(b);
  b.mmap2_build_id(10, 0x400000, 0x1000, 0, "/opt/gone/app", id_bytes('3'))
      .mmap2_build_id(11, 0x400000, 0x1000, 0, "/opt/gone/app", id_bytes('3'))
      .sample(0x400010, 10, 10, 1000);
  auto out = read_output(run("fix", b.build(), {{"--for", "5.10"}}));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::pair<std::string, std::string>> table;
  for (const auto& e : out->table) table.emplace_back(e.filename, format::build_id_hex(e));
  EXPECT_EQ(table, (std::vector<std::pair<std::string, std::string>>{{"/opt/gone/app", kAppId}}));
  ASSERT_EQ(out->maps.size(), 2U);
  for (const auto& m : out->maps) EXPECT_EQ(m.id, "") << m.filename;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PassTest, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace pdfix
