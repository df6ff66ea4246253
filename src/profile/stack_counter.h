// The counting half of a StackTap (profile/stacks.h): the records it decoded, as events applied in
// perf's time order (transform/time_order.h) to the one timeline of the processes' maps
// (transform/process_timeline.h), and each sample counted by its stack. It reads no record and
// asks no session: what it is given is all it knows, so it can run on a thread of its own
// (profile/counter_thread.h) while the next records are read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "profile/stack_table.h"
#include "transform/process_timeline.h"
#include "transform/time_order.h"

namespace pdfix::profile {

// What one record does, waiting for its turn in time order; a sample's addresses and a map's
// fields ride in the words it is queued with.
struct Event {
  enum class Kind : uint8_t { kMap, kFork, kExec, kComm, kSample } kind = Kind::kMap;
  uint16_t misc = 0;  // kMap: the record's; kSample: the cpumode of its ip
  uint32_t pid = 0;
  uint32_t tid = 0;  // kFork: the parent's pid (the words: the thread and its parent's)
  uint32_t aux = 0;  // kSample: the event; kComm: the command; kMap: the mapping
  uint64_t period = 0;
};

// A frame of a profile's stack: its mapping (an index into the profile's mappings plus one), its
// address, and whether that is a return address (every frame but the first of each part of the
// callchain: frame_of).
struct Frame {
  uint64_t mapping = 0;
  uint64_t address = 0;
  bool caller = false;
  bool operator==(const Frame&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Frame& f) {
    return H::combine(std::move(h), f.mapping, f.address, f.caller);
  }
};

// A frame in a profile's stack key (profile/locations.h: frames_of) is two words: its mapping
// (an index into the profile's mappings plus one, 0 for none), with kExactAddress set when the
// address is not a return address, and the address. Exact are the first address of each part
// of a callchain: the sample's own ip, and the user-mode ip a kernel part interrupted (a fault at
// a function's first byte is that function's, not the one before).
inline constexpr uint64_t kExactAddress = uint64_t{1} << 63;
inline Frame frame_of(std::span<const uint64_t> frames, size_t f) {
  return {.mapping = frames[f] & ~kExactAddress,
          .address = frames[f + 1],
          .caller = (frames[f] & kExactAddress) == 0};
}

// What samples are told apart by besides their event and stack: each asked for is a label of the
// profile's samples (and its stacks as many more).
struct Labels {
  bool comm = true;
  bool pid = false;
  bool tid = false;
};

// The hash of a sample as it came: its event, cpumode, pid, thread when labelled, and callchain
// (or ip). The reading thread makes it (profile/stacks.cc), so that the counting one, the busier,
// hashes three words a sample rather than the whole stack.
inline uint64_t sample_hash(const Event& e, const Labels& labels, std::span<const uint64_t> chain) {
  return absl::HashOf(e.aux, e.misc, e.pid, labels.tid ? e.tid : 0,
                      absl::MakeConstSpan(chain.data(), chain.size()));
}

class StackCounter {
 public:
  explicit StackCounter(Labels labels);

  // An event and its words (kMap: start, end, pgoff and, for the kernel image, the kernel's
  // start; kFork: the thread and its parent's; kSample: the callchain, or the ip alone, then its
  // sample_hash), at its time (nullopt: applied at once, as perf does).
  void add(std::optional<uint64_t> time, const Event& e, std::span<const uint64_t> words) {
    ordered_.add(time, e, words);
  }
  // A FINISHED_ROUND: what no later record can undercut is applied.
  void round() { ordered_.round(); }
  // Everything still waiting applied and counted.
  void finish() {
    ordered_.finish();
    flush_seen();
  }

  // The profile's stacks, keyed as Profile (profile/stacks.h) says, with their totals once
  // finished.
  StackTable& stacks() { return stacks_; }
  uint64_t samples() const { return samples_; }
  // The mappings (by index) a sample's frame first lay in since the last call.
  std::vector<uint32_t> take_first_sampled() { return std::exchange(first_sampled_, {}); }
  // The mapped frames of the stacks first counted since the last call, once a stack (a frame of
  // many stacks is told with each).
  std::vector<Frame> take_new_frames() { return std::exchange(new_frames_, {}); }

 private:
  void apply(const Event& e, std::span<const uint64_t> words);
  void count(const Event& e, std::span<const uint64_t> chain, uint64_t hash);
  uint32_t resolve(const Event& e, uint64_t comm_index, std::span<const uint64_t> chain);
  void flush_seen();

  static constexpr size_t kSeenWords = size_t{1} << 20;

  Labels labels_;
  StackTable stacks_;
  uint64_t samples_ = 0;
  std::vector<bool> sampled_;  // by mapping: whether first_sampled_ had it
  std::vector<uint32_t> first_sampled_;
  std::vector<Frame> new_frames_;
  struct Thread {
    std::optional<uint32_t> comm;
    StackTable::Place last = 0;  // in seen_: the stack of its last sample (0: none)
    uint64_t last_hash = 0;      // its first word: most samples' stacks differ in it, told here
  };
  absl::flat_hash_map<uint32_t, Thread> threads_;  // by tid
  transform::ProcessTimeline timeline_;
  transform::TimeOrder<Event> ordered_;
  std::vector<uint64_t> key_;  // a stack's, reused
  // A sample's stack as it came (the key of seen_): its hash, event, command, process, maps'
  // version, cpumode and labelled thread, then its callchain. Reused.
  static constexpr size_t kRawHeader = 7;
  std::vector<uint64_t> raw_;
  // The samples' stacks as they came (process, version, addresses), counted; hashed by their
  // first word, the sample_hash mixed with the command and the maps' version.
  StackTable seen_{StackTable::Hashing::kFirstWord};
  std::vector<uint32_t> seen_stack_;  // the profile's stack of each
};

}  // namespace pdfix::profile
