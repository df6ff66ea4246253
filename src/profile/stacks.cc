#include "profile/stacks.h"

#include <span>

#include "absl/strings/str_cat.h"
#include "format/build_id.h"
#include "format/feature.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/records.h"
#include "format/sample_layout.h"
#include "profile/counter_thread.h"
#include "transform/process_timeline.h"
#include "transform/time_order.h"

namespace pdfix::profile {

class StackTap::Impl {
 public:
  Impl(ProveFile prove, Labels labels)
      : prove_(std::move(prove)),
        labels_(labels),
        counting_(
            labels,
            [this](uint32_t m) {
              if (first_) first_(uint64_t{m} + 1, profile_.mappings[m]);
            },
            [this](std::span<const Frame> frames) {
              if (frames_) frames_(frames);
            }) {
    // No record names the idle task, pid 0; perf calls it swapper, and so do its samples here.
    comm_index_.emplace("swapper", 0);
    profile_.comms.emplace_back("swapper");
    counting_.add(std::nullopt, {.kind = Event::Kind::kComm, .aux = 0});
  }

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
        counting_.words().insert(counting_.words().end(), {t->tid, t->ptid});
        counting_.add(time(), {.kind = Event::Kind::kFork, .pid = t->pid, .tid = t->ppid});
        return absl::OkStatus();
      }
      case format::kComm:
        return comm(r, s, time());
      case format::kSample:
        return sample(r, s);
      case format::kFinishedRound:
      case format::kFinishedInit:
        counting_.round();
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  void end(const transform::Session& s) {
    StackCounter& counted = counting_.finish();
    profile_.stacks = std::move(counted.stacks());
    profile_.samples = counted.samples();
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
  void on_new(std::function<void(uint64_t, const Mapping&)> first,
              std::function<void(std::span<const Frame>)> frames) {
    first_ = std::move(first);
    frames_ = std::move(frames);
  }

 private:
  // Each attr of the session is one event of the profile, but those that carry only side-band
  // records (perf's dummy event): events_ holds the profile's, by_attr_ the index of each attr's.
  // A stream's attrs come as records: those not learned yet are learned as they appear.
  void learn_events(const transform::Session& s) {
    for (size_t i = by_attr_.size(); i < s.attrs().size(); ++i) {
      const format::EventAttr& a = s.attrs()[i];
      layouts_.emplace_back(a.sample_type, a.read_format);
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
    }
    std::vector<uint64_t>& words = counting_.words();
    words.insert(words.end(),
                 {m->start, transform::ProcessTimeline::end_of(m->start, m->len), m->pgoff});
    if (format::is_kernel_image_name(m->filename)) {
      if (const std::optional<uint64_t> start = s.kernel_start(machine)) words.push_back(*start);
    }
    counting_.add(time,
                  {.kind = Event::Kind::kMap, .misc = m->misc, .pid = m->pid, .aux = it->second});
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
    if (exec) counting_.add(time, {.kind = Event::Kind::kExec, .pid = c->pid});
    counting_.add(time,
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
    const format::SampleLayout& layout = layouts_[index];
    auto head = layout.head(r.bytes, s.endian(), r.offset);
    if (!head.ok()) return head.status();
    std::vector<uint64_t>& words = counting_.words();
    const size_t first = words.size();
    if (auto read = layout.callchain(r.bytes, s.endian(), *head, r.offset, words); !read.ok()) {
      words.resize(first);
      return read;
    }
    // Without a callchain (or with an empty one), the sample's ip is its stack.
    const uint16_t mode = r.header.misc & format::kCpuModeMask;
    if (words.size() == first) words.push_back(head->ip);
    const std::optional<uint64_t> time =
        (st & format::kSampleTime) != 0 ? std::optional(head->time) : std::nullopt;
    if (time) {
      if (!profile_.first_time || *time < *profile_.first_time) profile_.first_time = time;
      if (!profile_.last_time || *time > *profile_.last_time) profile_.last_time = time;
    }
    const Event event{.kind = Event::Kind::kSample,
                      .misc = mode,
                      .pid = head->pid,
                      .tid = head->tid,
                      .aux = by_attr_[index],
                      .period = (st & format::kSamplePeriod) != 0 ? head->period : 1};
    words.push_back(sample_hash(event, labels_, std::span(words).subspan(first)));
    counting_.add(time, event);
    return absl::OkStatus();
  }

  static constexpr uint32_t kNotCounted = UINT32_MAX;

  ProveFile prove_;
  Labels labels_;
  std::function<void(uint64_t, const Mapping&)> first_;
  std::function<void(std::span<const Frame>)> frames_;
  Profile profile_;
  std::vector<SampledEvent> events_;
  std::vector<uint32_t> by_attr_;
  std::vector<format::SampleLayout> layouts_;  // by attr
  absl::flat_hash_map<std::string, uint32_t> mapping_index_;
  absl::flat_hash_map<std::string, uint32_t> comm_index_;
  CounterThread counting_;  // last: its thread ends before the rest goes
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

void StackTap::on_new(std::function<void(uint64_t, const Mapping&)> first,
                      std::function<void(std::span<const Frame>)> frames) {
  impl_->on_new(std::move(first), std::move(frames));
}

Profile StackTap::take() { return impl_->take(); }

}  // namespace pdfix::profile
