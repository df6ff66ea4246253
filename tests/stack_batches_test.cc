// The counting thread's batches (profile/counter_thread.h): however the tap's records fall into
// the batches it hands over, each sample counts once, whole, under the maps and the command of
// its time, and what the thread tells its caller is told once.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "fixture/perf_data_builder.h"
#include "fixture/profile_of.h"
#include "format/records.h"
#include "io/input.h"
#include "profile/stacks.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::folded;
using testing::kCallchain;
using testing::PerfDataBuilder;
using testing::profile_of;
using testing::Told;
using testing::told_of;

// The tap hands its records to the counting thread in batches of a few thousand: a recording
// of many batches counts every sample under the map of its time, and the tap's caller is told of
// each mapping once and of each stack's frames once, on its own thread, in the order first
// sampled.
TEST(Stacks, SamplesOfManyBatchesCountAsOneAndEachMappingIsToldOnce) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa));
  uint64_t time = 1;
  for (int i = 0; i < 10000; ++i) {
    b.sample_callchain(0x400100, 7, 7, time++, {format::kContextUser, 0x400100, 0x400200});
    if (i % 1000 == 999) b.finished_round();
  }
  b.finished_round().mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app.new", Bytes(20, 0xbb));
  for (int i = 0; i < 5000; ++i) {
    b.sample_callchain(0x400100, 7, 7, time++, {format::kContextUser, 0x400100});
  }
  auto in = io::open_input(testing::write_temp(b.build()));
  ASSERT_TRUE(in.ok()) << in.status();
  profile::StackTap tap;
  std::vector<std::string> told;
  std::vector<profile::Frame> frames;
  const std::thread::id here = std::this_thread::get_id();
  tap.on_new(
      [&](uint64_t mapping, const profile::Mapping& m) {
        EXPECT_EQ(std::this_thread::get_id(), here);
        EXPECT_EQ(mapping, told.size() + 1);
        told.push_back(m.file);
      },
      [&](std::span<const profile::Frame> f) {
        EXPECT_EQ(std::this_thread::get_id(), here);
        frames.insert(frames.end(), f.begin(), f.end());
      });
  ASSERT_TRUE(transform::run_into_tap(*in, nullptr, tap, {}).ok());
  const profile::Profile p = tap.take();
  EXPECT_EQ(p.samples, 15000u);
  EXPECT_EQ(folded(p), "app;[app.new] 5000\napp;[app];[app] 10000\n");
  EXPECT_EQ(told, (std::vector<std::string>{"/usr/bin/app", "/usr/bin/app.new"}));
  // The frames of each of the two stacks, told once: the leaf's own address, then the return
  // address its caller's frame holds.
  EXPECT_EQ(frames, (std::vector<profile::Frame>{
                        {1, 0x400100, false}, {1, 0x400200, true}, {2, 0x400100, false}}));
}

// Of one batch (the last hand-over, at the end): what the counting thread tells of it, after
// the round, is told with what the end itself counts (the samples after the last round). The
// end once put its own in place of the batch's: the first mapping was never told, and its
// frames were never named beside the reading.
TEST(Stacks, WhatTheLastBatchTellsIsToldWithWhatTheEndCounts) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa))
      .sample_callchain(0x400100, 7, 7, 1, {format::kContextUser, 0x400100})
      .finished_round()
      .finished_round()
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app.new", Bytes(20, 0xbb))
      .sample_callchain(0x400100, 7, 7, 2, {format::kContextUser, 0x400100});
  const Told t = told_of(b.build());
  EXPECT_EQ(t.mappings, (std::vector<std::string>{"/usr/bin/app", "/usr/bin/app.new"}));
  EXPECT_EQ(t.frames, (std::vector<profile::Frame>{{1, 0x400100, false}, {2, 0x400100, false}}));
}

// A batch is handed over when the next event's words would not fit it: samples of callchains
// near a record's largest (65,535 bytes) fill a batch's 32 K words after four, and each is
// counted whole, under its own stack.
TEST(Stacks, ABatchIsHandedOverBeforeAnEventsWordsWouldPassItsEnd) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x10000, 0, "/usr/bin/app", Bytes(20, 0xaa));
  constexpr int kSamples = 23;
  constexpr uint64_t kFrames = 8000;
  for (int i = 0; i < kSamples; ++i) {
    std::vector<uint64_t> chain{format::kContextUser};
    // Three stacks, told apart by their last frame.
    for (uint64_t f = 0; f + 1 < kFrames; ++f) chain.push_back(0x400100 + f);
    chain.push_back(0x408000 + static_cast<uint64_t>(i % 3));
    b.sample_callchain(chain[1], 7, 7, static_cast<uint64_t>(i) + 1, chain);
  }
  const profile::Profile p = profile_of(b.build());
  EXPECT_EQ(p.samples, static_cast<uint64_t>(kSamples));
  ASSERT_EQ(p.stacks.size(), 3u);
  for (size_t s = 0; s < 3; ++s) {
    const std::span<const uint64_t> frames = profile::frames_of(p.stacks.key(s));
    ASSERT_EQ(frames.size(), 2 * kFrames);
    EXPECT_EQ(frames[1], 0x400100u);
    EXPECT_EQ(frames.back(), 0x408000 + s);
    EXPECT_EQ(p.stacks.totals(s).samples, s < 2 ? 8u : 7u);
  }
}

// An exec is two events to count, the exec and the new command: wherever a batch ends, even
// between the two, each sample counts under the command of its time. (The counter once took the
// second event's words from an index into the batch the first had handed over: stacks took
// words of others, and an export aborted.)
TEST(Stacks, AnExecAtTheEndOfABatchCountsAsAnyOther) {
  PerfDataBuilder b;
  b.attr({.sample_type = kCallchain, .sample_id_all = false, .ids = {1}})
      .comm(7, 7, "app", true)
      .mmap2_build_id(7, 0x400000, 0x1000, 0, "/usr/bin/app", Bytes(20, 0xaa));
  // Five events a round of the loop (a sample, the two rounds that count it as perf's ordered
  // events do, the exec and the new command), batches of 4096: an exec lands last in a batch
  // within five batches, wherever the first one began.
  constexpr int kRounds = 6000;
  for (int i = 0; i < kRounds; ++i) {
    b.sample_callchain(0x400100, 7, 7, i + 1, {format::kContextUser, 0x400100, 0x400200})
        .finished_round()
        .finished_round()
        .comm(7, 7, i % 2 == 0 ? "even" : "odd", true);
  }
  const profile::Profile p = profile_of(b.build());
  EXPECT_EQ(p.samples, static_cast<uint64_t>(kRounds));
  // The first sample in the program's file; each exec drops the maps, so the rest are unmapped,
  // each under the command of its time.
  EXPECT_EQ(folded(p),
            "app;[app];[app] 1\n"
            "even;[unknown];[unknown] 3000\n"
            "odd;[unknown];[unknown] 2999\n");
}

}  // namespace
}  // namespace pdfix
