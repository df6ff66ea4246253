#include "store/keep_verdict.h"

#include <gtest/gtest.h>

namespace pdfix::store {
namespace {

Binary binary(const std::string& name, uint64_t samples, bool kept) {
  Binary b{.name = name, .samples = samples};
  if (kept) b.from = Binary::From::kFile;
  return b;
}

TEST(KeepVerdict, UnresolvedHitsMostSamplesFirstAndMissingCountsEveryNamedBinary) {
  const Named named{.binaries = {binary("/kept", 50, true), binary("/lost-hit", 7, false),
                                 binary("/lost-unhit", 0, false), binary("/b-lost", 7, false)},
                    .idless = {binary("/by-path", 9, true), binary("/raw", 20, false)},
                    .samples = 100};
  const Verdict v = judge(named);
  EXPECT_EQ(v.missing, 3u);
  ASSERT_EQ(v.unresolved.size(), 3u);
  EXPECT_EQ(v.unresolved[0]->name, "/raw");
  // Equal counts by name.
  EXPECT_EQ(v.unresolved[1]->name, "/b-lost");
  EXPECT_EQ(v.unresolved[2]->name, "/lost-hit");
  EXPECT_EQ(v.unresolved_samples, 34u);
  EXPECT_FALSE(v.no_ids);
  EXPECT_FALSE(v.incomplete(false));
  EXPECT_TRUE(v.incomplete(true));
  EXPECT_DOUBLE_EQ(share(v.unresolved_samples, named.samples), 34.0);
}

TEST(KeepVerdict, SamplesInFilesAndNoIdAtAllIsNotDoneEvenWithoutStrict) {
  const Verdict v = judge({.idless = {binary("/raw", 5, false)}, .samples = 5});
  EXPECT_TRUE(v.no_ids);
  EXPECT_TRUE(v.incomplete(false));
  // Files kept by path alone are resolved: the job is done.
  const Verdict by_path = judge({.idless = {binary("/go-prog", 5, true)}, .samples = 5});
  EXPECT_FALSE(by_path.no_ids);
  EXPECT_FALSE(by_path.incomplete(true));
  EXPECT_EQ(share(1, 0), 0.0);
}

}  // namespace
}  // namespace pdfix::store
