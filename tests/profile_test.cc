// The profile's stacks (profile/stacks.h) from synthetic recordings, and the names of frames in
// the vdso and of C++ functions.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string_view>

#include "fixture/perf_data_builder.h"
#include "fixture/profile_of.h"
#include "format/records.h"
#include "profile/coverage.h"
#include "profile/demangle.h"
#include "profile/folded.h"
#include "profile/locations.h"
#include "profile/namer.h"
#include "profile/stacks.h"
#include "profile/symbolizer.h"
#include "resolve/elf_build_id.h"
#include "resolve/host.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::folded;
using testing::kCallchain;
using testing::PerfDataBuilder;
using testing::profile_of;
using testing::Told;
using testing::told_of;

TEST(Stacks, AFramesMapIsTheOneThatCoveredItWhenTheSampleWasTaken) {
  PerfDataBuilder b;
  // Side-band records without times (no sample_id_all) apply as they come; samples wait for
  // their round, as perf's ordered events have them.
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .sample_callchain(0x400100, 7, 7, 10, {format::kContextUser, 0x400100, 0x400200, 0x500000})
      .sample_callchain(0x400100, 7, 7, 5, {format::kContextUser, 0x400100})
      .finished_round()
      .finished_round()
      // The same addresses, another file, from then on.
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app.new", Bytes(20, 0xbb))
      .sample_callchain(0x400100, 7, 7, 30, {format::kContextUser, 0x400100})
      .comm(7, 8, "worker")
      .sample_callchain(0x400100, 7, 8, 40, {format::kContextUser, 0x400100});
  const profile::Profile p = profile_of(b.build());
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name, "cpu-clock");
  EXPECT_TRUE(p.events[0].clock);
  EXPECT_EQ(p.samples, 4u);
  ASSERT_EQ(p.mappings.size(), 2u);
  EXPECT_EQ(p.mappings[0].build_id, std::string(40, 'a'));
  // Root first: the address no map covers, then the two frames in the first file; the samples
  // after the second map in the new file, each under its thread's command.
  EXPECT_EQ(folded(p),
            "app;[app.new] 1\n"
            "app;[app] 1\n"
            "app;[unknown];[app];[app] 1\n"
            "worker;[app.new] 1\n");
}

// Samples of a round count in the order of their times, not the file's: perf writes each CPU's
// buffer in turn. The mapping sampled first in time is told first, and its frames.
TEST(Stacks, ARoundsSamplesAreTakenInTheOrderOfTheirTimes) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .mmap2_build_id(7, 0x700000, 0x1000, 0, "/usr/lib/lib.so", Bytes(20, 0xbb))
      .sample_callchain(0x700100, 7, 7, 20, {format::kContextUser, 0x700100})
      .sample_callchain(0x400100, 7, 7, 10, {format::kContextUser, 0x400100})
      .finished_round();
  const Told t = told_of(b.build());
  EXPECT_EQ(t.samples, 2u);
  EXPECT_EQ(t.mappings, (std::vector<std::string>{"/usr/bin/app", "/usr/lib/lib.so"}));
  EXPECT_EQ(t.frames, (std::vector<profile::Frame>{{1, 0x400100, false}, {2, 0x700100, false}}));
}

// The summary's leaves by binary: a binary two processes map (two mappings, one file and id) is
// one entry, its samples those of both; another binary's apart; the most samples first.
TEST(Stacks, LeavesAreCountedByBinaryWhateverProcessMapsIt) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .comm(8, 8, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .mmap2_build_id(8, 0x500000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .mmap2_build_id(8, 0x700000, 0x1000, 0, "/usr/lib/lib.so", Bytes(20, 0xbb))
      .sample_callchain(0x400100, 7, 7, 1, {format::kContextUser, 0x400100})
      .sample_callchain(0x700100, 8, 8, 2, {format::kContextUser, 0x700100})
      .sample_callchain(0x500100, 8, 8, 3, {format::kContextUser, 0x500100})
      .sample_callchain(0x500200, 8, 8, 4, {format::kContextUser, 0x500200});
  const profile::Profile p = profile_of(b.build());
  ASSERT_EQ(p.mappings.size(), 3u);
  profile::Locations locations(p, nullptr);
  const std::vector<profile::MappingCoverage> leaves = profile::leaf_coverage(p, locations);
  ASSERT_EQ(leaves.size(), 2u);
  EXPECT_EQ(p.mappings[leaves[0].mapping - 1].file, "/usr/bin/app");
  EXPECT_EQ(leaves[0].samples, 3u);
  EXPECT_EQ(p.mappings[leaves[1].mapping - 1].file, "/usr/lib/lib.so");
  EXPECT_EQ(leaves[1].samples, 1u);
}

// A thread's sample that repeats its last stack is counted without the table of stacks: it
// still counts under the command and the maps of its time (the side-band records have no time
// here: they apply as they come, the samples at the ends of their rounds), and another thread's
// samples between two of its own change nothing.
TEST(Stacks, AThreadsRepeatedStackCountsUnderTheCommandAndMapsOfItsTime) {
  PerfDataBuilder b;
  const std::vector<uint64_t> chain{format::kContextUser, 0x400100, 0x400200};
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .comm(7, 8, "worker")
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .sample_callchain(0x400100, 7, 7, 1, chain)
      .sample_callchain(0x400100, 7, 8, 2, chain)
      .sample_callchain(0x400100, 7, 7, 3, chain)
      .finished_round()
      .finished_round()
      .comm(7, 7, "renamed")
      .sample_callchain(0x400100, 7, 7, 4, chain)
      .finished_round()
      .finished_round()
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app.new", Bytes(20, 0xbb))
      .sample_callchain(0x400100, 7, 7, 5, chain)
      .sample_callchain(0x400100, 7, 8, 6, chain);
  EXPECT_EQ(folded(profile_of(b.build())),
            "app;[app];[app] 2\n"
            "renamed;[app.new];[app.new] 1\n"
            "renamed;[app];[app] 1\n"
            "worker;[app.new];[app.new] 1\n"
            "worker;[app];[app] 1\n");
}

// The stacks as they came (under each version of a process's maps) are counted apart and let go
// when they outgrow the profile's own: a process that maps its file anew before each sample
// makes a new one each time. Every sample is in the totals, those counted before each letting go
// and those after the last.
TEST(Stacks, SamplesCountedBeforeTheStacksAsTheyCameAreLetGoKeepTheirTotals) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}}).comm(7, 7, "app", true);
  std::vector<uint64_t> chain{format::kContextUser};
  for (uint64_t i = 0; i < 100; ++i) chain.push_back(0x400100 + i);
  // 110 words each (the chain, the sample's event, command, process, maps' version, mode and
  // thread, and the table's index and totals): 1 M words are let go after about 9,500.
  constexpr int kSamples = 25000;
  for (int i = 0; i < kSamples; ++i) {
    b.mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
        .sample_callchain(0x400100, 7, 7, static_cast<uint64_t>(i) + 1, chain);
  }
  const profile::Profile p = profile_of(b.build());
  EXPECT_EQ(p.samples, static_cast<uint64_t>(kSamples));
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks.totals(0).samples, static_cast<uint64_t>(kSamples));
}

TEST(Stacks, ADeferredUserPartEndsTheStackItsCookieIsNoFrame) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .sample_callchain(
          0xffffffff81000100, 7, 7, 10,
          {format::kContextKernel, 0xffffffff81000100, format::kContextUserDeferred, 0x1234}, 1);
  EXPECT_EQ(folded(profile_of(b.build())), "app;[unknown] 1\n");
}

// The first address of each part of a callchain is where that part stood, not a return address:
// the kernel's ip, and the user-mode ip the kernel part interrupted (a fault or an interrupt at a
// function's first byte is that function's). Every other address is a return address.
TEST(Stacks, EachPartsFirstAddressIsNoReturnAddress) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .sample_callchain(0xffffffff81000100, 7, 7, 10,
                        {format::kContextKernel, 0xffffffff81000100, 0xffffffff81000200,
                         format::kContextUser, 0x400100, 0x400200});
  const profile::Profile p = profile_of(b.build());
  ASSERT_EQ(p.stacks.size(), 1u);
  profile::Locations locations(p, nullptr);
  std::vector<std::pair<uint64_t, bool>> frames;  // address, caller
  for (const uint32_t l : locations.of(profile::frames_of(p.stacks.key(0)))) {
    frames.emplace_back(locations.all()[l].address, locations.all()[l].caller);
    EXPECT_EQ(locations.all()[l].mapping, locations.all()[l].address < 0x500000 ? 1u : 0u);
  }
  EXPECT_EQ(frames, (std::vector<std::pair<uint64_t, bool>>{{0xffffffff81000100, false},
                                                            {0xffffffff81000200, true},
                                                            {0x400100, false},
                                                            {0x400200, true}}));
}

// perf names the idle task, pid 0, swapper though no record names it (perf script prints its
// samples so); a thread no COMM names stays unnamed, and a COMM for pid 0 names it as any other.
TEST(Stacks, TheIdleTasksSamplesAreSwappers) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .sample_callchain(0xffffffff81000100, 0, 0, 10, {format::kContextKernel, 0xffffffff81000100})
      .sample_callchain(0x400100, 9, 9, 11, {format::kContextUser, 0x400100})
      .finished_round()
      .finished_round()
      .comm(0, 0, "idle")
      .sample_callchain(0xffffffff81000100, 0, 0, 12, {format::kContextKernel, 0xffffffff81000100});
  EXPECT_EQ(folded(profile_of(b.build())),
            "[unknown];[unknown] 1\nidle;[unknown] 1\nswapper;[unknown] 1\n");
}

TEST(Stacks, SamplesOfTheDummyEventAreNotCounted) {
  PerfDataBuilder b;
  b.attr({.config = 9, .sample_type = 0x107, .ids = {1}}).sample(0x400100, 7, 7, 10);
  const profile::Profile p = profile_of(b.build());
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.samples, 0u);
  EXPECT_EQ(p.not_counted, 1u);
}

// A frame in the vdso is named from the vdso of the recording's build-id: this process's, when the
// kernel that maps it is the one running (else a build-id cache's copy), as nm names its symbols.
// The functions of this process's vdso by address, as binutils' nm reads them (the vdso's vaddrs
// are its offsets); empty when nm cannot.
std::map<uint64_t, std::set<std::string>> vdso_functions(std::span<const uint8_t> vdso) {
  const std::string copy = testing::write_temp(Bytes(vdso.begin(), vdso.end()));
  std::map<uint64_t, std::set<std::string>> functions;
  FILE* nm = popen(("nm -D --defined-only " + copy).c_str(), "r");
  if (nm == nullptr) return functions;
  char line[512];
  while (fgets(line, sizeof line, nm) != nullptr) {
    unsigned long long at = 0;
    char type = 0;
    char name[256];
    if (sscanf(line, "%llx %c %255s", &at, &type, name) == 3 && (type == 'T' || type == 'W')) {
      const std::string_view symbol(name);
      functions[at].insert(std::string(symbol.substr(0, symbol.find('@'))));  // no @@LINUX_2.6
    }
  }
  if (pclose(nm) != 0) functions.clear();
  return functions;
}

// This process's vdso mapped as a profile's mapping, and its functions; nullopt when either is
// not to be had.
struct Vdso {
  profile::Mapping mapping;
  std::map<uint64_t, std::set<std::string>> functions;
};
std::optional<Vdso> this_vdso(const resolve::LiveHost& host) {
  const std::span<const uint8_t> vdso = host.vdso();
  auto id = resolve::build_id_of_elf(vdso);
  if (vdso.empty() || !id.ok() || !id->has_value()) return std::nullopt;
  Vdso v{.mapping = {.start = 0x7f0000000000,
                     .limit = 0x7f0000000000 + vdso.size(),
                     .file = "[vdso]",
                     .build_id = (*id)->hex()},
         .functions = vdso_functions(vdso)};
  if (v.functions.empty()) return std::nullopt;
  return v;
}

TEST(Symbolizer, AVdsoFrameIsNamedFromThisProcesssVdso) {
  const resolve::LiveHost host;
  const std::optional<Vdso> vdso = this_vdso(host);
  ASSERT_TRUE(vdso.has_value());
  const profile::Mapping& m = vdso->mapping;
  profile::Symbolizer symbolizer(host, {});
  for (const auto& [at, names] : vdso->functions) {
    const std::vector<profile::Line> lines = symbolizer.lines(m, m.start + at + 1, false);
    ASSERT_FALSE(lines.empty()) << *names.begin() << ": " << symbolizer.problem(m);
    EXPECT_TRUE(names.contains(lines[0].function)) << lines[0].function;
  }
}

// Frames named while a recording is read (profile/namer.h) are named as the Symbolizer names
// them when asked later, each frame once, a return address inside its call (at a function's
// first byte: the function before it, or nothing); a kernel frame, or one of a mapping not
// added, is left to the Symbolizer.
TEST(Namer, NamesEachFrameAsTheSymbolizerWould) {
  const resolve::LiveHost host;
  const std::optional<Vdso> vdso = this_vdso(host);
  ASSERT_TRUE(vdso.has_value());
  const profile::Mapping& m = vdso->mapping;
  const std::map<uint64_t, std::set<std::string>>& functions = vdso->functions;
  const profile::Mapping kernel{.start = 0xffffffff81000000,
                                .limit = 0xffffffff82000000,
                                .file = "[kernel.kallsyms]_text",
                                .kernel = true};
  // Each function's leaf and return address inside it, and a return address at its first byte.
  std::vector<profile::Frame> frames;
  std::vector<uint64_t> function_of;  // the function each frame lies in (its offset)
  for (const auto& [at, names] : functions) {
    frames.insert(
        frames.end(),
        {{1, m.start + at + 1, false}, {1, m.start + at + 1, true}, {1, m.start + at, true}});
    function_of.insert(function_of.end(), {at, at, at});
  }
  // A kernel frame, one of a mapping not added, and one no map covered.
  const std::vector<profile::Frame> others{
      {2, 0xffffffff81000100, false}, {3, m.start, false}, {0, m.start, false}};
  profile::Symbolizer symbolizer(host, {});
  profile::NamedFrames named;
  {
    profile::Namer namer(symbolizer);
    namer.name({});  // nothing to name
    namer.add(1, m);
    namer.add(2, kernel);
    namer.name(frames);
    namer.name(frames);  // again: named once
    namer.name(others);
    named = namer.finish();
  }
  EXPECT_EQ(named.size(), frames.size());
  for (const profile::Frame& f : others) EXPECT_FALSE(named.contains(f)) << f.mapping;
  profile::Symbolizer asked(host, {});
  for (size_t n = 0; n < frames.size(); ++n) {
    const profile::Frame& f = frames[n];
    ASSERT_TRUE(named.contains(f)) << f.address;
    const std::vector<profile::Line>& lines = named[f];
    const std::vector<profile::Line> expected = asked.lines(m, f.address, f.caller);
    ASSERT_EQ(lines.size(), expected.size()) << f.address;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].system_name, expected[i].system_name) << f.address;
    }
    const std::set<std::string>& names = functions.at(function_of[n]);
    if (f.address != m.start + function_of[n] || !f.caller) {
      ASSERT_FALSE(lines.empty()) << *names.begin();
      EXPECT_TRUE(names.contains(lines[0].function)) << lines[0].function;
    } else if (!lines.empty()) {
      EXPECT_FALSE(names.contains(lines[0].function)) << lines[0].function;
    }
  }
}

// Names as perf report and pprof show them: a C++ function without its parameters (its clone
// suffix dropped), the rest as they are.
TEST(Demangle, AFunctionIsShownByItsScopedNameWithoutParameters) {
  EXPECT_EQ(profile::function_name("_ZN6shapes3BoxIiE4spinEi"), "shapes::Box<int>::spin");
  EXPECT_EQ(profile::function_name("_ZN6shapes3BoxIiE4spinEi.isra.0"), "shapes::Box<int>::spin");
  EXPECT_EQ(profile::function_name("_Znwm"), "operator new");
  EXPECT_EQ(profile::function_name("_ZTVSt9exception"), "vtable for std::exception");
  EXPECT_EQ(profile::function_name("do_execveat_common.isra.0"), "do_execveat_common.isra.0");
  EXPECT_EQ(profile::function_name("main.fib"), "main.fib");
  EXPECT_EQ(profile::function_name("JS:*fib_js"), "JS:*fib_js");
  // C functions whose names the Itanium grammar reads as builtin types (float, int, double).
  EXPECT_EQ(profile::function_name("f"), "f");
  EXPECT_EQ(profile::function_name("i"), "i");
  EXPECT_EQ(profile::function_name("d"), "d");
}

}  // namespace
}  // namespace pdfix
