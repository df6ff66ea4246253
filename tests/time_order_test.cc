// Records in the order perf applies them (transform/time_order.h), and the two consumers that
// follow a process's maps: hit counts (buildid-list --hits, check, archive) and unwinding. The
// recordings put a child's exec, maps and first sample in the file before the FORK that made it,
// as a CPU whose buffer is flushed first does.
#include "transform/time_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "format/attr.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "inspect/buildid_list.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"
#include "passes/repair.h"
#include "passes/unwind_stacks.h"
#include "resolve/elf_build_id.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

TEST(TimeOrder, ARoundIsDeliveredUpToTheTimeTheRoundBeforeReached) {
  std::vector<int> got;
  transform::TimeOrder<int> order([&](int& v, std::span<const uint64_t>) { got.push_back(v); });
  order.add(30, 30);
  order.add(10, 10);
  order.add(std::nullopt, 0);  // no time: at once
  EXPECT_EQ(got, std::vector<int>({0}));
  order.round();  // nothing before the first round can be delivered yet
  EXPECT_EQ(got, std::vector<int>({0}));
  order.add(20, 20);  // a later buffer's record, earlier than one of the round before
  order.add(40, 40);
  order.round();  // up to 30, the highest time of the round before
  EXPECT_EQ(got, std::vector<int>({0, 10, 20, 30}));
  order.add(40, 41);  // equal times keep their arrival order
  order.finish();
  EXPECT_EQ(got, std::vector<int>({0, 10, 20, 30, 40, 41}));
}

// Each item is delivered with the words it was added with, however long it waited and whatever
// was delivered around it.
TEST(TimeOrder, AnItemKeepsItsOwnWordsThroughTheRoundsItWaits) {
  std::vector<std::pair<int, std::vector<uint64_t>>> got;
  transform::TimeOrder<int> order([&](int& v, std::span<const uint64_t> words) {
    got.emplace_back(v, std::vector<uint64_t>(words.begin(), words.end()));
  });
  const std::vector<uint64_t> thirty = {30, 31, 32};
  const std::vector<uint64_t> ten = {10};
  const std::vector<uint64_t> fifty = {50, 51};
  order.add(30, 30, thirty);
  order.add(10, 10, ten);
  order.add(20, 20);
  order.round();
  order.add(50, 50, fifty);
  order.round();  // up to 30: 50 waits, its words moved with it
  order.add(40, 40, ten);
  order.round();
  order.finish();
  const std::vector<std::pair<int, std::vector<uint64_t>>> want = {
      {10, ten}, {20, {}}, {30, thirty}, {40, ten}, {50, fifty}};
  EXPECT_EQ(got, want);
}

// Whatever order the records come in (a run a CPU, or none at all), they are delivered by time and,
// at equal times, in the order they came.
TEST(TimeOrder, RunsAndDisorderAreDeliveredInTimeThenArrivalOrder) {
  for (const size_t runs : {1, 2, 3, 7, 64, 65, 1000}) {
    std::vector<std::pair<uint64_t, int>> got;
    transform::TimeOrder<std::pair<uint64_t, int>> order(
        [&](std::pair<uint64_t, int>& v, std::span<const uint64_t>) { got.push_back(v); });
    std::vector<std::pair<uint64_t, int>> sent;
    uint64_t state = runs;
    for (int i = 0; i < 1000; ++i) {
      // A run restarts every 1000 / runs items, at a time of its own; times repeat across runs.
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const uint64_t time = (i % (1000 / runs == 0 ? 1 : 1000 / runs)) * 3 + (state >> 62);
      sent.emplace_back(time, i);
      order.add(time, sent.back());
    }
    order.finish();
    std::sort(sent.begin(), sent.end());  // by time, then by arrival (the second member)
    EXPECT_EQ(got, sent) << runs << " runs";
  }
}

// Past its bound the queue delivers all it holds in the time order reached, counts it, and holds
// from nothing again: what a size field claims cannot make it grow without end.
TEST(TimeOrder, WhatWaitsIsBoundedAndAnEarlyFlushCounted) {
  std::vector<int> got;
  // 16 words an item: more than an int's own entry, so that two fit under the bound and three
  // pass it.
  const std::vector<uint64_t> words(16);
  constexpr uint64_t kWords = 16 * sizeof(uint64_t);
  transform::TimeOrder<int> order([&](int& v, std::span<const uint64_t>) { got.push_back(v); },
                                  3 * kWords);
  order.add(30, 30, words);
  order.add(10, 10, words);
  EXPECT_EQ(order.waiting(), 2u);
  EXPECT_TRUE(got.empty());
  order.add(20, 20, words);  // the third passes the bound: 3 * (128 + the entry's own size)
  EXPECT_EQ(got, std::vector<int>({10, 20, 30}));
  EXPECT_EQ(order.waiting(), 0u);
  EXPECT_EQ(order.early_flushes(), 1u);
  order.add(5, 5, words);  // held again, from nothing
  order.add(1, 1, words);
  EXPECT_EQ(order.waiting(), 2u);
  order.finish();
  EXPECT_EQ(got, std::vector<int>({10, 20, 30, 1, 5}));
  EXPECT_EQ(order.early_flushes(), 1u);
}

constexpr uint32_t kParent = 100;
constexpr uint32_t kChild = 200;
constexpr uint64_t kText = 0x400000;
// IP | TID | TIME | PERIOD | REGS_USER | STACK_USER: the sample_id trailer is TID and TIME.
constexpr uint64_t kSampleType = 0x107 | format::kSampleRegsUser | format::kSampleStackUser;
constexpr uint64_t kRegs = (1 << 6) | (1 << 7) | (1 << 8);  // x86 bp, sp, ip
constexpr uint64_t kStackSize = 64;

class Records {
 public:
  explicit Records(PerfDataBuilder& b) : b_(b) {}
  void fork(uint32_t pid, uint32_t ppid, uint64_t time) {
    Bytes body;
    put32(body, pid), put32(body, ppid), put32(body, pid), put32(body, ppid), put64(body, time);
    trailer(body, pid, time);
    b_.raw_record(format::kFork, 0, body);
  }
  // A new thread `tid` of process `pid`.
  void thread(uint32_t pid, uint32_t tid, uint64_t time) {
    Bytes body;
    put32(body, pid), put32(body, pid), put32(body, tid), put32(body, pid), put64(body, time);
    trailer(body, pid, time);
    b_.raw_record(format::kFork, 0, body);
  }
  void exec(uint32_t pid, const std::string& comm, uint64_t time) {
    Bytes body;
    put32(body, pid), put32(body, pid);
    text(body, comm);
    trailer(body, pid, time);
    b_.raw_record(format::kComm, 0x2000, body);
  }
  // An executable MMAP2 carrying `id`.
  void map(uint32_t pid, uint64_t start, uint64_t len, const std::string& path,
           const format::BuildId& id, uint64_t time) {
    Bytes body;
    put32(body, pid), put32(body, pid), put64(body, start), put64(body, len), put64(body, 0);
    body.push_back(id.size);
    body.insert(body.end(), 3, 0);
    body.insert(body.end(), id.bytes.begin(), id.bytes.end());
    put32(body, 5), put32(body, 2);  // PROT_READ | PROT_EXEC, MAP_PRIVATE
    text(body, path);
    trailer(body, pid, time);
    b_.raw_record(format::kMmap2, 0x4002, body);
  }
  // A user-mode sample at `ip`, with registers and a stack copy that lead nowhere further.
  void sample(uint32_t pid, uint64_t ip, uint64_t time, uint32_t tid = 0) {
    Bytes body;
    put64(body, ip), put32(body, pid), put32(body, tid == 0 ? pid : tid), put64(body, time);
    put64(body, 1);
    put64(body, 2);  // regs ABI 64
    put64(body, 0), put64(body, 0x7ff000), put64(body, ip);
    put64(body, kStackSize);
    body.insert(body.end(), kStackSize, 0);
    put64(body, kStackSize);
    b_.raw_record(format::kSample, 2, body);
  }

 private:
  static void put32(Bytes& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void put64(Bytes& b, uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  static void text(Bytes& b, const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    b.push_back(0);
    while (b.size() % 8 != 0) b.push_back(0);
  }
  static void trailer(Bytes& b, uint32_t pid, uint64_t time) {
    put32(b, pid), put32(b, pid), put64(b, time);
  }
  PerfDataBuilder& b_;
};

// An x86_64 recording whose samples carry user registers and stack copies, records to come.
PerfDataBuilder dwarf_recording() {
  PerfDataBuilder b;
  b.attr({.sample_type = kSampleType,
          .size = 104,
          .ids = {},
          .sample_regs_user = kRegs,
          .sample_stack_user = kStackSize});
  b.string_feature(format::kFeatArch, "x86_64");
  return b;
}

// The parent maps `parent_bin` (if any) and forks a child that execs `child_bin`: the child's
// exec, map and first sample come before the FORK in the file, its second sample in the next
// round.
Bytes fork_late(const std::string& parent_bin, const format::BuildId& parent_id,
                const std::string& child_bin, const format::BuildId& child_id, uint64_t len) {
  PerfDataBuilder b = dwarf_recording();
  Records r(b);
  if (!parent_bin.empty()) r.map(kParent, kText, len, parent_bin, parent_id, 10);
  r.exec(kChild, "child", 30);
  r.map(kChild, kText, len, child_bin, child_id, 31);
  r.sample(kChild, kText + 0x10, 32);
  r.fork(kChild, kParent, 20);
  b.finished_round();
  r.sample(kChild, kText + 0x10, 40);
  b.finished_round();
  return b.build();
}

format::BuildId id_of(char c) {
  format::BuildId id;
  id.size = 20;
  id.bytes.fill(static_cast<uint8_t>(c));
  return id;
}

TEST(TimeOrder, AChildsSamplesCountForWhatItExecdThoughItsForkComesLate) {
  const std::string path =
      testing::write_temp(fork_late("/bin/parent", id_of(1), "/bin/child", id_of(2), 0x1000));
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  auto listing = inspect::list_build_ids(*in, {.hits = true, .count_samples = true});
  ASSERT_TRUE(listing.ok()) << listing.status();
  uint64_t parent = 0, child = 0;
  for (const auto& dso : listing->dsos) {
    if (dso.name == "/bin/parent") parent = dso.samples;
    if (dso.name == "/bin/child") child = dso.samples;
  }
  // In file order the late FORK would give the child the parent's maps for its second sample.
  EXPECT_EQ(child, 2U);
  EXPECT_EQ(parent, 0U);
}

// Hit counts take the one bound too: past it, the child's second sample counts for the map reached
// in file order (the parent's, which the late FORK gave it), and the listing says it flushed early.
TEST(TimeOrder, PastTheLookAheadBoundHitsTakeTheOrderReached) {
  const std::string path =
      testing::write_temp(fork_late("/bin/parent", id_of(1), "/bin/child", id_of(2), 0x1000));
  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  auto listing =
      inspect::list_build_ids(*in, {.hits = true, .count_samples = true, .look_ahead_bytes = 1});
  ASSERT_TRUE(listing.ok()) << listing.status();
  uint64_t parent = 0, child = 0;
  for (const auto& dso : listing->dsos) {
    if (dso.name == "/bin/parent") parent = dso.samples;
    if (dso.name == "/bin/child") child = dso.samples;
  }
  EXPECT_GT(listing->early_flushes, 0U);
  EXPECT_EQ(child, 1U);
  EXPECT_EQ(parent, 1U);
}

// `recording` unwound by the unwind pass, on a host with nothing of its own.
std::unique_ptr<transform::Pass> unwound(const std::string& recording,
                                         uint64_t look_ahead_bytes = transform::kLookAheadBytes) {
  auto in = io::open_input(recording);
  EXPECT_TRUE(in.ok()) << in.status();
  if (!in.ok()) return nullptr;
  testing::FakeHost host;
  std::unique_ptr<passes::RepairKind> kind;
  for (auto& k : passes::repair_kinds()) {
    if (k->verb() == "unwind") kind = std::move(k);
  }
  passes::Common common = passes::common_for(nullptr, "", {}, host, {kind.get()});
  common.look_ahead_bytes = look_ahead_bytes;
  auto chain = transform::run_pipeline(*in, recording + ".out",
                                       [&] {
                                         transform::PassChain c;
                                         c.push_back(kind->make(common));
                                         return c;
                                       },
                                       {});
  EXPECT_TRUE(chain.ok()) << chain.status();
  if (!chain.ok()) return nullptr;
  return std::move(chain->front());
}

TEST(TimeOrder, AChildIsUnwoundInWhatItExecdThoughItsForkComesLate) {
  // The child's binary is this test program: a real ELF whose build-id the map carries.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  auto id = resolve::build_id_of_file(self);
  ASSERT_TRUE(id.ok() && id->has_value()) << self;
  const std::string path = testing::write_temp(fork_late("", {}, self, **id, 0x1000));
  auto unwind = unwound(path);
  ASSERT_NE(unwind, nullptr);
  const auto& pass = dynamic_cast<const passes::UnwindStacks&>(*unwind);
  EXPECT_EQ(pass.report().samples, 2U);
  // In file order the second sample's pc would be in no map: the FORK would have wiped the
  // child's. In time order both are placed in the child's binary (which has no CFI for an ELF
  // header's bytes, so the unwind stops there, with the pc as the user frame).
  EXPECT_FALSE(pass.report().stops.contains("pc in no mapped file"));
  std::string report;
  llvm::raw_string_ostream os(report);
  os << llvm::json::Value(pass.report_json());
  ASSERT_TRUE(pass.report().lacking_cfi.contains(self)) << os.str();
  EXPECT_EQ(pass.report().lacking_cfi.at(self), 2U) << os.str();
}

// Hit counts and unwinding place every sample in the same map, by one timeline's rules: a fork
// copies the parent's maps, an exec clears them, a thread samples in its process's. Each sample is
// in this test program (a real ELF with no CFI for the header bytes its pcs fall in, so unwinding
// stops there, in the binary) or in no map.
TEST(TimeOrder, HitsAndUnwindingPlaceEverySampleInTheSameMap) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  auto id = resolve::build_id_of_file(self);
  ASSERT_TRUE(id.ok() && id->has_value()) << self;
  constexpr uint64_t kOther = 0x800000;
  constexpr uint32_t kThread = kChild + 1;
  PerfDataBuilder b = dwarf_recording();
  Records r(b);
  r.map(kParent, kOther, 0x1000, self, **id, 10);
  r.exec(kChild, "child", 30);  // in the file before the FORK that copied the parent's maps
  r.map(kChild, kText, 0x1000, self, **id, 31);
  r.sample(kChild, kText + 0x10, 32);   // the child's own map
  r.sample(kChild, kOther + 0x10, 33);  // the parent's map, which the exec cleared
  r.fork(kChild, kParent, 20);
  b.finished_round();
  r.thread(kChild, kThread, 40);
  r.sample(kChild, kText + 0x10, 41, kThread);  // a thread, in its process's maps
  r.sample(kParent, kOther + 0x10, 42);
  b.finished_round();
  const std::string path = testing::write_temp(b.build());

  auto in = io::open_input(path);
  ASSERT_TRUE(in.ok()) << in.status();
  auto listing = inspect::list_build_ids(*in, {.hits = true, .count_samples = true});
  ASSERT_TRUE(listing.ok()) << listing.status();
  uint64_t hits_in_self = 0;
  for (const auto& dso : listing->dsos) hits_in_self += dso.name == self ? dso.samples : 0;
  ASSERT_EQ(listing->samples, 4U);

  auto unwind = unwound(path);
  ASSERT_NE(unwind, nullptr);
  const passes::UnwindReport& report = dynamic_cast<const passes::UnwindStacks&>(*unwind).report();
  ASSERT_EQ(report.samples, 4U);
  const uint64_t unwound_in_self =
      report.lacking_cfi.contains(self) ? report.lacking_cfi.at(self) : 0;
  const uint64_t unwound_nowhere =
      report.stops.contains("pc in no mapped file") ? report.stops.at("pc in no mapped file") : 0;

  EXPECT_EQ(hits_in_self, 3U);
  EXPECT_EQ(unwound_in_self, hits_in_self);
  EXPECT_EQ(unwound_nowhere, listing->samples - hits_in_self);
}

// Past the look-ahead's bound the records held for their round go in the order reached: here the
// file's, so the late FORK wipes the child's maps before its second sample, as perf's own queue
// does when it outgrows its memory; the summary counts the early flushes.
TEST(TimeOrder, PastTheLookAheadBoundUnwindingTakesTheOrderReached) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  auto id = resolve::build_id_of_file(self);
  ASSERT_TRUE(id.ok() && id->has_value()) << self;
  const std::string path = testing::write_temp(fork_late("", {}, self, **id, 0x1000));
  auto unwind = unwound(path, /*look_ahead_bytes=*/1);
  ASSERT_NE(unwind, nullptr);
  const passes::UnwindReport& report = dynamic_cast<const passes::UnwindStacks&>(*unwind).report();
  EXPECT_EQ(report.samples, 2U);
  EXPECT_GT(report.early_flushes, 0U);
  ASSERT_TRUE(report.stops.contains("pc in no mapped file"));
  EXPECT_EQ(report.stops.at("pc in no mapped file"), 1U);
}

}  // namespace
}  // namespace pdfix
