#include "profile/stacks.h"

#include <span>

#include "absl/strings/str_cat.h"
#include "format/build_id.h"
#include "format/feature.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/records.h"
#include "transform/process_timeline.h"
#include "transform/time_order.h"

namespace pdfix::profile {
namespace {

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

}  // namespace

class StackTap::Impl {
 public:
  Impl(ProveFile prove, Labels labels)
      : prove_(std::move(prove)),
        labels_(labels),
        ordered_([this](Event& e, std::span<const uint64_t> w) { apply(e, w); }) {}

  absl::Status record(const transform::RecordRef& r, const transform::Session& s) {
    learn_events(s);
    const auto time = [&] { return transform::record_time(r, s); };
    switch (r.header.type) {
      case format::kMmap:
      case format::kMmap2:
        return map(r, s, time());
      case format::kFork: {
        auto t = format::decode_task(r.bytes, s.endian(), r.offset);
        if (!t.ok()) return t.status();
        words_ = {t->tid, t->ptid};
        ordered_.add(time(), {.kind = Event::Kind::kFork, .pid = t->pid, .tid = t->ppid}, words_);
        return absl::OkStatus();
      }
      case format::kComm:
        return comm(r, s, time());
      case format::kSample:
        return sample(r, s);
      case format::kFinishedRound:
      case format::kFinishedInit:
        ordered_.round();
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  void end(const transform::Session& s) {
    ordered_.finish();
    learn_events(s);
    profile_.events = events_;
    profile_.labels = labels_;
    profile_.hostname = s.hostname();
    profile_.osrelease = s.osrelease();
    if (auto f = s.feature(format::kFeatVersion)) {
      if (auto v = format::decode_string_feature(*f); v.ok()) profile_.perf_version = *v;
    }
    if (auto f = s.feature(format::kFeatCmdline)) {
      if (auto words = format::decode_cmdline(*f); words.ok()) {
        for (const std::string& w : *words) {
          absl::StrAppend(&profile_.command_line, profile_.command_line.empty() ? "" : " ", w);
        }
      }
    }
  }

  Profile take() { return std::move(profile_); }
  void on_first_sample(std::function<void(const Mapping&)> first) { first_ = std::move(first); }

 private:
  // Each attr of the session is one event of the profile, but those that carry only side-band
  // records (perf's dummy event): events_ holds the profile's, by_attr_ the index of each attr's.
  // A stream's attrs come as records: those not learned yet are learned as they appear.
  void learn_events(const transform::Session& s) {
    for (size_t i = by_attr_.size(); i < s.attrs().size(); ++i) {
      const format::EventAttr& a = s.attrs()[i];
      if (a.is_dummy()) {
        by_attr_.push_back(kNotCounted);
        continue;
      }
      const std::string name = s.event_name(i);
      uint32_t index = 0;
      while (index < events_.size() && events_[index].name != name) ++index;
      if (index == events_.size()) {
        events_.push_back({.name = name, .clock = a.counts_time()});
      }
      by_attr_.push_back(index);
    }
  }

  absl::Status map(const transform::RecordRef& r, const transform::Session& s,
                   std::optional<uint64_t> time) {
    auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
    if (!m.ok()) return m.status();
    const uint64_t machine = format::machine_of(m->misc, m->pid);
    if (machine != format::kHostMachine) return absl::OkStatus();
    Mapping mapping{.start = m->start,
                    .limit = transform::ProcessTimeline::end_of(m->start, m->len),
                    .offset = m->pgoff,
                    .file = std::string(m->filename),
                    .kernel = format::is_kernel_mode(m->misc),
                    .pid = m->pid};
    if (m->has_build_id()) {
      mapping.build_id = format::build_id_hex({0, 0, 0, m->build_id, m->build_id_size, ""});
    }
    // A binary is its path and build-id; without an id, its path and inode: two files at one
    // path (a container's and the host's) are two mappings, each named from its own file.
    const std::string inode = m->has_build_id() || !m->is_mmap2
                                  ? std::string()
                                  : absl::StrCat(m->maj, ":", m->min, ":", m->ino);
    auto [it, added] = mapping_index_.try_emplace(
        absl::StrCat(mapping.start, " ", mapping.limit, " ", mapping.offset, " ", mapping.build_id,
                     " ", inode, " ", mapping.kernel, " ", mapping.file),
        static_cast<uint32_t>(profile_.mappings.size()));
    if (added) {
      if (mapping.build_id.empty() && !mapping.kernel && prove_) {
        mapping.proven_file = prove_(*m, s);
      }
      profile_.mappings.push_back(std::move(mapping));
      sampled_.push_back(false);
    }
    words_ = {m->start, transform::ProcessTimeline::end_of(m->start, m->len), m->pgoff};
    if (format::is_kernel_image_name(m->filename)) {
      if (const std::optional<uint64_t> start = s.kernel_start(machine)) words_.push_back(*start);
    }
    ordered_.add(time,
                 {.kind = Event::Kind::kMap, .misc = m->misc, .pid = m->pid, .aux = it->second},
                 words_);
    return absl::OkStatus();
  }

  absl::Status comm(const transform::RecordRef& r, const transform::Session& s,
                    std::optional<uint64_t> time) {
    auto c = format::decode_comm(r.bytes, s.endian(), s.trailer_size(r), r.offset);
    if (!c.ok()) return c.status();
    auto [it, added] =
        comm_index_.try_emplace(std::string(c->comm), static_cast<uint32_t>(profile_.comms.size()));
    if (added) profile_.comms.emplace_back(c->comm);
    const bool exec = (r.header.misc & format::kMiscCommExec) != 0;
    if (exec) ordered_.add(time, {.kind = Event::Kind::kExec, .pid = c->pid});
    ordered_.add(time,
                 {.kind = Event::Kind::kComm, .pid = c->pid, .tid = c->tid, .aux = it->second});
    return absl::OkStatus();
  }

  absl::Status sample(const transform::RecordRef& r, const transform::Session& s) {
    const format::EventAttr* attr = s.attr_for(r);
    const size_t index = attr == nullptr ? by_attr_.size() : attr - s.attrs().data();
    if (index >= by_attr_.size() || by_attr_[index] == kNotCounted) {
      ++profile_.not_counted;
      return absl::OkStatus();
    }
    const uint64_t st = attr->sample_type;
    auto head = format::decode_sample_head(r.bytes, s.endian(), st, r.offset);
    if (!head.ok()) return head.status();
    words_.clear();
    if (auto read =
            format::sample_callchain(r.bytes, s.endian(), st, attr->read_format, r.offset, words_);
        !read.ok()) {
      return read;
    }
    // Without a callchain (or with an empty one), the sample's ip is its stack.
    const uint16_t mode = r.header.misc & format::kCpuModeMask;
    if (words_.empty()) words_.push_back(head->ip);
    const std::optional<uint64_t> time =
        (st & format::kSampleTime) != 0 ? std::optional(head->time) : std::nullopt;
    if (time) {
      if (!profile_.first_time || *time < *profile_.first_time) profile_.first_time = time;
      if (!profile_.last_time || *time > *profile_.last_time) profile_.last_time = time;
    }
    ordered_.add(time,
                 {.kind = Event::Kind::kSample,
                  .misc = mode,
                  .pid = head->pid,
                  .tid = head->tid,
                  .aux = by_attr_[index],
                  .period = (st & format::kSamplePeriod) != 0 ? head->period : 1},
                 words_);
    return absl::OkStatus();
  }

  void apply(const Event& e, std::span<const uint64_t> words) {
    switch (e.kind) {
      case Event::Kind::kMap:
        timeline_.map(e.misc, e.pid,
                      {.start = words[0], .end = words[1], .pgoff = words[2], .file = e.aux},
                      words.size() > 3 ? std::optional(words[3]) : std::nullopt);
        break;
      case Event::Kind::kFork:
        timeline_.fork(e.pid, e.tid);
        // A new thread or process runs its parent's command until it names its own.
        if (auto parent = comm_of_.find(static_cast<uint32_t>(words[1]));
            parent != comm_of_.end()) {
          comm_of_[static_cast<uint32_t>(words[0])] = parent->second;
        }
        break;
      case Event::Kind::kExec:
        timeline_.exec(e.pid);
        break;
      case Event::Kind::kComm:
        comm_of_[e.tid] = e.aux;
        break;
      case Event::Kind::kSample:
        count(e, words);
        break;
    }
  }

  void count(const Event& e, std::span<const uint64_t> chain) {
    auto comm = comm_of_.find(e.tid);
    const uint64_t comm_index = comm != comm_of_.end() ? comm->second + 1 : 0;
    // The same stack of the same process comes again and again while its maps stay as they are:
    // its frames' maps are looked up once for all of them.
    raw_.assign(
        {e.aux, comm_index, e.pid, timeline_.version(e.pid), e.misc, labels_.tid ? e.tid : 0});
    raw_.insert(raw_.end(), chain.begin(), chain.end());
    auto [raw, added] = seen_.intern(raw_);
    if (added) {
      seen_stack_.push_back(resolve(e, comm_index, chain));
    }
    Totals& t = profile_.stacks.totals(seen_stack_[raw]);
    ++t.samples;
    t.period += e.period;
    ++profile_.samples;
    // What was seen under versions now past is kept within a bound of the profile's own stacks.
    if (seen_.words() > 2 * profile_.stacks.words() + kSeenWords) {
      seen_ = StackTable();
      seen_stack_.clear();
    }
  }

  // The profile's stack of a sample: its event, command, and each frame's mapping and address.
  uint32_t resolve(const Event& e, uint64_t comm_index, std::span<const uint64_t> chain) {
    key_.clear();
    key_.push_back(e.aux);
    key_.push_back(labels_.comm ? comm_index : 0);
    key_.push_back(labels_.pid ? uint64_t{e.pid} + 1 : 0);
    key_.push_back(labels_.tid ? uint64_t{e.tid} + 1 : 0);
    // A callchain starts with a context marker (kernel, then user); a lone ip has the sample's.
    uint16_t context = e.misc;
    for (const uint64_t ip : chain) {
      // A user part that comes later (CALLCHAIN_DEFERRED) is not joined: the stack ends here,
      // rather than take the cookie after the marker for an address.
      if (ip == format::kContextUserDeferred) break;
      if (format::is_context_marker(ip)) {
        if (ip == format::kContextKernel) context = format::kCpuModeKernel;
        if (ip == format::kContextUser) context = format::kCpuModeUser;
        continue;
      }
      const transform::ProcessTimeline::Map* m = timeline_.find(context, e.pid, ip);
      if (m != nullptr && first_ && !sampled_[m->file]) {
        sampled_[m->file] = true;
        first_(profile_.mappings[m->file]);
      }
      key_.push_back(m == nullptr ? 0 : uint64_t{m->file} + 1);
      key_.push_back(ip);
    }
    const uint32_t index = profile_.stacks.intern(key_).first;
    profile_.stacks.totals(index);  // every stack of the profile has its totals
    return index;
  }

  static constexpr uint32_t kNotCounted = UINT32_MAX;
  static constexpr size_t kSeenWords = size_t{1} << 20;

  ProveFile prove_;
  Labels labels_;
  std::function<void(const Mapping&)> first_;
  std::vector<bool> sampled_;  // by mapping: whether first_ was told of it
  Profile profile_;
  std::vector<SampledEvent> events_;
  std::vector<uint32_t> by_attr_;
  absl::flat_hash_map<std::string, uint32_t> mapping_index_;
  absl::flat_hash_map<std::string, uint32_t> comm_index_;
  absl::flat_hash_map<uint32_t, uint32_t> comm_of_;  // by tid
  transform::ProcessTimeline timeline_;
  transform::TimeOrder<Event> ordered_;
  std::vector<uint64_t> words_;  // a record's, reused
  std::vector<uint64_t> key_;    // a stack's, reused
  std::vector<uint64_t> raw_;    // a sample's as it came, reused
  StackTable seen_;              // the samples' stacks as they came: process, version, addresses
  std::vector<uint32_t> seen_stack_;  // the profile's stack of each
};

StackTap::StackTap(ProveFile prove, Labels labels)
    : impl_(std::make_unique<Impl>(std::move(prove), labels)) {}
StackTap::~StackTap() = default;

bool StackTap::taps(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kFork ||
         type == format::kComm || type == format::kSample || type == format::kFinishedRound ||
         type == format::kFinishedInit;
}

absl::Status StackTap::record(const transform::RecordRef& r, const transform::Session& s) {
  if (r.trailing) return absl::OkStatus();
  return impl_->record(r, s);
}

absl::Status StackTap::end(const transform::Session& s, const transform::FeatureEdits& /*edits*/) {
  impl_->end(s);
  return absl::OkStatus();
}

void StackTap::on_first_sample(std::function<void(const Mapping&)> first) {
  impl_->on_first_sample(std::move(first));
}

Profile StackTap::take() { return impl_->take(); }

}  // namespace pdfix::profile
