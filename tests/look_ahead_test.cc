// The one look-ahead (transform/look_ahead.h): its byte accounting, and every pass that holds
// records back applying what it holds at the bound, the same way, and saying so.
#include "transform/look_ahead.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture/pass_test.h"
#include "llvm/Support/JSON.h"

namespace pdfix {
namespace {

using testing::kModules;
using testing::kText;
using testing::PassTest;
using testing::PerfDataBuilder;
using testing::read_output;

TEST(LookAhead, CountsEveryHeldByteAndLetsGoOfThemAgain) {
  transform::LookAhead<std::string> held(3 * 100);
  EXPECT_FALSE(held.hold("a", 10));
  const uint64_t one = held.bytes();
  EXPECT_GT(one, 10u);  // the holder's own entry counts too
  EXPECT_FALSE(held.hold("b", 10));
  held.filter([](const std::string& s) { return s != "a"; });
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(held.bytes(), one);
  EXPECT_EQ(held.take_front(), "b");
  EXPECT_EQ(held.bytes(), 0u);
  // A claim as large as the bound passes it at once, however few records it is.
  EXPECT_TRUE(held.hold("c", 300));
  EXPECT_EQ(held.take_all(), std::vector<std::string>{"c"});
  EXPECT_EQ(held.bytes(), 0u);
  EXPECT_EQ(held.early_flushes(), 0u);
  held.flushed_early();
  EXPECT_EQ(held.early_flushes(), 1u);
}

// With a bound no record fits under, every pass of fix that holds records (the kernel-side maps
// for tag-kernel and repair-build-ids, the module maps for fix-module-sizes) applies each at once:
// every record still goes out once, in order, and each report counts its early flushes. The
// module after a runaway one is then not yet seen: the runaway map is not ended at it.
TEST_P(PassTest, PastTheLookAheadBoundEveryPassAppliesWhatItHoldsAndSaysSo) {
  PerfDataBuilder b = builder();
  table_entry(b, '1', "[kernel.kallsyms]");
  start_data(b);
  b.mmap(-1, kText, 0x1000000, kText, "[kernel.kallsyms]_text", format::kCpuModeKernel)
      .mmap(-1, kModules, 0x8000, 0, "[a]", format::kCpuModeKernel)
      .mmap(-1, kModules + 0x8000, 0 - (kModules + 0x8000), 0, "[b]", format::kCpuModeKernel)
      .mmap(-1, kModules + 0x20000, 0x3000, 0, "[c]", format::kCpuModeKernel)
      .sample(kModules + 0x10, 10, 10, 1000, format::kCpuModeKernel)
      .finished_round();
  const auto input = b.build();
  auto whole = read_output(run("fix", input));
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (const char* pass : {"fix-module-sizes", "tag-kernel", "repair-build-ids"}) {
    EXPECT_EQ(report_of(pass).getInteger("early_flushes"), 0) << pass;
  }
  EXPECT_EQ(whole->maps[2].fields.len, 0x18000U);

  look_ahead_bytes_ = 1;
  auto flushed = read_output(run("fix", input));
  ASSERT_TRUE(flushed.ok()) << flushed.status();
  EXPECT_EQ(flushed->types, whole->types);
  ASSERT_EQ(flushed->maps.size(), whole->maps.size());
  for (size_t i = 0; i < whole->maps.size(); ++i) {
    EXPECT_EQ(flushed->maps[i].fields.filename, whole->maps[i].fields.filename);
    EXPECT_EQ(flushed->maps[i].fields.start, whole->maps[i].fields.start);
  }
  EXPECT_EQ(report_of("fix-module-sizes").getInteger("early_flushes"), 3);
  // tag-kernel holds the modules only behind the kernel map, which went out at once.
  EXPECT_GE(report_of("tag-kernel").getInteger("early_flushes").value_or(0), 1);
  EXPECT_EQ(report_of("repair-build-ids").getInteger("early_flushes"), 4);
  EXPECT_NE(flushed->maps[2].fields.len, 0x18000U);
}

}  // namespace
}  // namespace pdfix
