#include "profile/stack_counter.h"

#include <algorithm>

#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::profile {

StackCounter::StackCounter(Labels labels)
    : labels_(labels), ordered_([this](Event& e, std::span<const uint64_t> w) { apply(e, w); }) {}

void StackCounter::apply(const Event& e, std::span<const uint64_t> words) {
  switch (e.kind) {
    case Event::Kind::kMap:
      timeline_.map(e.misc, e.pid,
                    {.start = words[0], .end = words[1], .pgoff = words[2], .file = e.aux},
                    words.size() > 3 ? std::optional(words[3]) : std::nullopt);
      break;
    case Event::Kind::kFork:
      timeline_.fork(e.pid, e.tid);
      // A new thread or process runs its parent's command until it names its own.
      if (auto parent = threads_.find(static_cast<uint32_t>(words[1]));
          parent != threads_.end() && parent->second.comm) {
        const uint32_t comm = *parent->second.comm;
        threads_[static_cast<uint32_t>(words[0])].comm = comm;
      }
      break;
    case Event::Kind::kExec:
      timeline_.exec(e.pid);
      break;
    case Event::Kind::kComm:
      threads_[e.tid].comm = e.aux;
      break;
    case Event::Kind::kSample:
      count(e, words.first(words.size() - 1), words.back());
      break;
  }
}

void StackCounter::count(const Event& e, std::span<const uint64_t> chain, uint64_t hash) {
  Thread& thread = threads_[e.tid];
  const uint64_t comm_index = thread.comm ? uint64_t{*thread.comm} + 1 : 0;
  // The same stack of the same process comes again and again while its maps stay as they are:
  // its frames' maps are looked up once for all of them.
  const uint64_t version = timeline_.version(e.pid);
  // Written word by word: an initializer list is stored and loaded back in halves, each load a
  // forwarding stall.
  raw_.resize(kRawHeader + chain.size());
  raw_[0] = absl::HashOf(hash, comm_index, version);
  raw_[1] = e.aux;
  raw_[2] = comm_index;
  raw_[3] = e.pid;
  raw_[4] = version;
  raw_[5] = e.misc;
  raw_[6] = labels_.tid ? e.tid : 0;
  std::ranges::copy(chain, raw_.begin() + kRawHeader);
  // Counted under the stack as it came (added to the profile's stacks when those are let go:
  // flush_seen). A thread's sample has the stack of its last one about a third of the time (a
  // loop's): compared with that, in cache, before the table is asked.
  if (thread.last != 0 && thread.last_hash == raw_[0] &&
      std::ranges::equal(seen_.key_at(thread.last), raw_)) {
    seen_.add_at(thread.last, {.samples = 1, .period = e.period});
  } else {
    const StackTable::Counted counted = seen_.count(raw_, 1, e.period);
    if (counted.added) seen_stack_.push_back(resolve(e, comm_index, chain));
    thread.last = counted.place;
    thread.last_hash = raw_[0];
  }
  ++samples_;
  // What was seen under versions now past is kept within a bound of the profile's own stacks.
  if (seen_.words() > 2 * stacks_.words() + kSeenWords) flush_seen();
}

void StackCounter::flush_seen() {
  for (size_t i = 0; i < seen_.size(); ++i) stacks_.add(seen_stack_[i], seen_.totals(i));
  seen_ = StackTable(StackTable::Hashing::kFirstWord);
  seen_stack_.clear();
  for (auto& [tid, thread] : threads_) thread.last = 0;
}

// The profile's stack of a sample: its event, command, and each frame's mapping and address.
uint32_t StackCounter::resolve(const Event& e, uint64_t comm_index,
                               std::span<const uint64_t> chain) {
  key_.clear();
  key_.push_back(e.aux);
  key_.push_back(labels_.comm ? comm_index : 0);
  key_.push_back(labels_.pid ? uint64_t{e.pid} + 1 : 0);
  key_.push_back(labels_.tid ? uint64_t{e.tid} + 1 : 0);
  // A callchain starts with a context marker (kernel, then user); a lone ip has the sample's.
  uint16_t context = e.misc;
  bool first_of_part = true;
  for (const uint64_t ip : chain) {
    // A user part that comes later (CALLCHAIN_DEFERRED) is not joined: the stack ends here,
    // rather than take the cookie after the marker for an address.
    if (ip == format::kContextUserDeferred) break;
    if (format::is_context_marker(ip)) {
      if (ip == format::kContextKernel) context = format::kCpuModeKernel;
      if (ip == format::kContextUser) context = format::kCpuModeUser;
      first_of_part = true;
      continue;
    }
    const transform::ProcessTimeline::Map* m = timeline_.find(context, e.pid, ip);
    if (m != nullptr) {
      if (m->file >= sampled_.size()) sampled_.resize(m->file + 1);
      if (!sampled_[m->file]) {
        sampled_[m->file] = true;
        first_sampled_.push_back(m->file);
      }
    }
    key_.push_back((m == nullptr ? 0 : uint64_t{m->file} + 1) |
                   (first_of_part ? kExactAddress : 0));
    key_.push_back(ip);
    first_of_part = false;
  }
  const auto [index, added] = stacks_.intern(key_);
  if (added) {
    const std::span<const uint64_t> frames = std::span(key_).subspan(4);
    for (size_t f = 0; f + 1 < frames.size(); f += 2) {
      if (const Frame frame = frame_of(frames, f); frame.mapping != 0) {
        new_frames_.push_back(frame);
      }
    }
  }
  return index;
}

}  // namespace pdfix::profile
