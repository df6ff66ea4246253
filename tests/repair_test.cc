// The repairs of wrong build-ids, and fix and check over them, in every fixture shape (the suite
// is instantiated in passes_test.cc): perf 6.17's poisoned module ids, the table's word over a
// record's, and what fix lists and check finds.
#include "passes/repair.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

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
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::id_bytes;
using testing::kAppId;
using testing::kKernelId;
using testing::kModules;
using testing::kNfId;
using testing::kText;
using testing::OutMap;
using testing::Output;
using testing::PassTest;
using testing::PerfDataBuilder;
using testing::read_output;

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

}  // namespace
}  // namespace pdfix
