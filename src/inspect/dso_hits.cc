#include "inspect/dso_hits.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/records.h"
#include "transform/process_timeline.h"
#include "transform/time_order.h"

namespace pdfix::inspect {
namespace {

// The name perf files a map's DSO under: the kernel image by its machine's kernel name.
std::string dso_name(uint64_t machine, std::string_view filename) {
  return format::is_kernel_image_name(filename) ? format::kernel_name(machine)
                                                : std::string(filename);
}

// `pids` into the sorted `to`, once each.
void add_pids(std::vector<uint32_t>& to, const std::vector<uint32_t>& pids) {
  for (uint32_t pid : pids) {
    auto at = std::lower_bound(to.begin(), to.end(), pid);
    if (at == to.end() || *at != pid) to.insert(at, pid);
  }
}

// The DSOs perf would tell apart, and the process timeline that places addresses in them.
class Model {
 public:
  // A DSO is a file and the build-id its map records carry: the host's libc.so.6 and a
  // container's are two DSOs of one name. A map that carries no id is its inode's DSO (`key`
  // "ino:...", or "" without one).
  size_t dso(uint64_t machine, const std::string& name, const std::string& key, bool carried) {
    auto [it, added] = index_.try_emplace({machine, name, key}, dsos_.size());
    if (added) {
      dsos_.push_back({carried ? key : "", name, format::machine_label(machine)});
      machines_.push_back(machine);
      if (!carried) idless_[{machine, name}].push_back(it->second);
    }
    return it->second;
  }
  // A DSO's file and process, as a map record names them.
  void mapped_by(size_t dso, const format::MmapRecord& m) {
    DsoBuildId& d = dsos_[dso];
    if (m.is_mmap2 && m.ino != 0) {
      d.has_inode = true;
      d.maj = m.maj;
      d.min = m.min;
      d.ino = m.ino;
    }
    // Kernel maps are pid -1: of no process.
    if (m.pid != UINT32_MAX) add_pids(d.pids, {m.pid});
  }
  // The DSOs of `name` whose maps carry no id.
  std::vector<size_t> idless(uint64_t machine, const std::string& name) const {
    auto it = idless_.find({machine, name});
    return it == idless_.end() ? std::vector<size_t>{} : it->second;
  }
  // The build-id table names files by path alone: its ids name DSOs of their own.
  size_t listed(uint64_t machine, const std::string& name, const std::string& id) {
    std::vector<std::string>& ids = table_[{machine, name}];
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    return dso(machine, name, id, true);
  }
  void hit(size_t dso) {
    if (hits_.size() <= dso) hits_.resize(dsos_.size());
    hits_[dso] = true;
  }
  bool was_hit(size_t dso) const { return dso < hits_.size() && hits_[dso]; }
  // A sample whose own ip is in `dso` (none: in no DSO).
  void sampled(std::optional<size_t> dso) {
    ++total_samples_;
    if (!dso) return;
    if (samples_.size() <= *dso) samples_.resize(dsos_.size());
    ++samples_[*dso];
  }
  uint64_t samples(size_t dso) const { return dso < samples_.size() ? samples_[dso] : 0; }
  uint64_t total_samples() const { return total_samples_; }
  const std::vector<DsoBuildId>& dsos() const { return dsos_; }
  uint64_t machine(size_t dso) const { return machines_[dso]; }
  // The table's id for a DSO of `name` whose maps carry none: its only id, when the DSO is the
  // only file of that name and no map record carries an id for it. Else the table cannot tell
  // which file its id is (the host's libc.so.6 or a container's).
  std::string table_id(uint64_t machine, const std::string& name) const {
    auto it = table_.find({machine, name});
    if (it == table_.end() || it->second.size() != 1 || idless(machine, name).size() != 1) {
      return "";
    }
    return records_carry_.contains({machine, name}) ? "" : it->second.front();
  }
  // A map record of `name` carries its own id.
  void carries(uint64_t machine, const std::string& name) {
    records_carry_.insert({machine, name});
  }

  transform::ProcessTimeline& timeline() { return timeline_; }

 private:
  std::vector<DsoBuildId> dsos_;
  std::vector<uint64_t> machines_;
  std::map<std::pair<uint64_t, std::string>, std::vector<std::string>> table_;
  std::set<std::pair<uint64_t, std::string>> records_carry_;
  std::map<std::pair<uint64_t, std::string>, std::vector<size_t>> idless_;
  std::vector<bool> hits_;
  std::vector<uint64_t> samples_;
  uint64_t total_samples_ = 0;
  absl::flat_hash_map<std::tuple<uint64_t, std::string, std::string>, size_t> index_;
  transform::ProcessTimeline timeline_;
};

// What one record does to the model, decoded, waiting for its turn; small, for a recording is
// mostly samples and each waits in the queue. What it carries beyond are the words it is queued
// with: a sample's ip, then its callchain as recorded (context markers included); a map's start,
// end, pgoff and DSO, then, for the kernel's own map, the session's kernel start.
struct Event {
  enum class Kind : uint8_t { kMap, kFork, kExec, kSample } kind = Kind::kMap;
  uint16_t misc = 0;  // kMap: the record's; kSample: the cpumode of its ip
  uint32_t pid = 0;
  uint32_t ppid = 0;
};

std::optional<size_t> mark(Model& model, uint16_t mode, uint32_t pid, uint64_t ip) {
  const transform::ProcessTimeline::Map* m = model.timeline().find(mode, pid, ip);
  if (m == nullptr) return std::nullopt;
  model.hit(m->file);
  return m->file;
}

void apply(Model& model, const Event& e, std::span<const uint64_t> words) {
  switch (e.kind) {
    case Event::Kind::kMap: {
      if (words.size() < 4) break;
      const transform::ProcessTimeline::Map m{.start = words[0],
                                              .end = words[1],
                                              .pgoff = words[2],
                                              .file = static_cast<uint32_t>(words[3])};
      model.timeline().map(e.misc, e.pid, m,
                           words.size() > 4 ? std::optional(words[4]) : std::nullopt);
      break;
    }
    case Event::Kind::kFork:
      model.timeline().fork(e.pid, e.ppid);
      break;
    case Event::Kind::kExec:
      model.timeline().exec(e.pid);
      break;
    case Event::Kind::kSample: {
      if (words.empty()) break;
      model.sampled(mark(model, e.misc, e.pid, words.front()));
      uint16_t context = e.misc;
      for (const uint64_t ip : words.subspan(1)) {
        if (format::is_context_marker(ip)) {
          if (ip == format::kContextKernel) context = format::kCpuModeKernel;
          if (ip == format::kContextUser) context = format::kCpuModeUser;
          continue;
        }
        mark(model, context, e.pid, ip);
      }
      break;
    }
  }
}

absl::StatusOr<Event> map_event(Model& model, const transform::RecordRef& r,
                                const transform::Session& s, std::vector<uint64_t>& words) {
  auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  Event e;
  e.kind = Event::Kind::kMap;
  e.pid = m->pid;
  e.misc = m->misc;
  const uint64_t machine = format::machine_of(m->misc, m->pid);
  const std::string name = dso_name(machine, m->filename);
  size_t dso = 0;
  if (m->has_build_id()) {
    model.carries(machine, name);
    dso = model.dso(machine, name,
                    format::build_id_hex({0, 0, 0, m->build_id, m->build_id_size, ""}), true);
  } else {
    const bool inode = m->is_mmap2 && m->ino != 0;
    dso = model.dso(machine, name,
                    inode ? absl::StrCat("ino:", m->maj, ":", m->min, ":", m->ino) : "", false);
  }
  model.mapped_by(dso, *m);
  words = {m->start, transform::ProcessTimeline::end_of(m->start, m->len), m->pgoff, dso};
  if (format::is_kernel_image_name(m->filename)) {
    if (const std::optional<uint64_t> start = s.kernel_start(machine)) words.push_back(*start);
  }
  return e;
}

absl::StatusOr<Event> fork_event(const transform::RecordRef& r, const transform::Session& s) {
  auto t = format::decode_task(r.bytes, s.endian(), r.offset);
  if (!t.ok()) return t.status();
  Event e;
  e.kind = Event::Kind::kFork;
  e.pid = t->pid;
  e.ppid = t->ppid;
  return e;
}

absl::StatusOr<Event> exec_event(const transform::RecordRef& r, const transform::Session& s) {
  auto c = format::decode_comm(r.bytes, s.endian(), s.trailer_size(r), r.offset);
  if (!c.ok()) return c.status();
  Event e;
  e.kind = Event::Kind::kExec;
  e.pid = c->pid;
  return e;
}

// A sample into `e`, its time into `time` (when its event records one), and into `words` its ip
// and callchain. False for a sample of no known event.
absl::StatusOr<bool> sample_event(const transform::RecordRef& r, const transform::Session& s,
                                  bool callchain, Event& e, std::optional<uint64_t>& time,
                                  std::vector<uint64_t>& words) {
  words.clear();
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr) return false;
  const uint64_t st = attr->sample_type;
  auto head = format::decode_sample_head(r.bytes, s.endian(), st, r.offset);
  if (!head.ok()) return head.status();
  e = {.kind = Event::Kind::kSample,
       .misc = static_cast<uint16_t>(r.header.misc & format::kCpuModeMask),
       .pid = head->pid};
  time = (st & format::kSampleTime) != 0 ? std::optional(head->time) : std::nullopt;
  words.push_back(head->ip);
  if (!callchain) return true;
  absl::Status read =
      format::sample_callchain(r.bytes, s.endian(), st, attr->read_format, r.offset, words);
  if (!read.ok()) return read;
  return true;
}

}  // namespace

class DsoHits::Impl {
 public:
  Impl(bool callchains, uint64_t look_ahead_bytes)
      : callchains_(callchains),
        ordered_([this](Event& e, std::span<const uint64_t> words) { apply(model_, e, words); },
                 look_ahead_bytes) {}
  // The DSOs as listed: those without an id of their own given the table's, then one entry per
  // machine, name and id. Made when first asked for after a change.
  struct Listing {
    std::vector<DsoBuildId> dsos;
    std::vector<bool> hits;
    std::vector<uint64_t> samples;
  };
  const Listing& listing() {
    if (listing_) return *listing_;
    listing_.emplace();
    absl::flat_hash_map<std::string, size_t> index;
    for (size_t i : order()) {
      DsoBuildId d = model_.dsos()[i];
      if (d.build_id.empty()) d.build_id = model_.table_id(model_.machine(i), d.name);
      // Files without an id stay apart by inode: two of them at one path are two binaries.
      const std::string file =
          d.build_id.empty() && d.has_inode ? absl::StrCat(d.maj, ":", d.min, ":", d.ino) : "";
      auto [it, added] = index.try_emplace(
          absl::StrCat(model_.machine(i), "\n", d.name, "\n", d.build_id, "\n", file),
          listing_->dsos.size());
      if (added) {
        listing_->dsos.push_back(d);
        listing_->hits.push_back(false);
        listing_->samples.push_back(0);
      }
      if (!added) add_pids(listing_->dsos[it->second].pids, d.pids);
      if (model_.was_hit(i)) listing_->hits[it->second] = true;
      listing_->samples[it->second] += model_.samples(i);
    }
    return *listing_;
  }
  // The file's table first, as a reader of the file meets it before any record; then the rest in
  // the order first seen.
  std::vector<size_t> order() const {
    std::vector<size_t> out = file_table_;
    for (size_t i = 0; i < model_.dsos().size(); ++i) {
      if (i >= in_table_.size() || !in_table_[i]) out.push_back(i);
    }
    return out;
  }
  bool callchains_;
  Model model_;
  std::vector<size_t> file_table_;  // DSOs the file's own table names, in its order, once each
  std::vector<bool> in_table_;      // by DSO: in file_table_
  transform::TimeOrder<Event> ordered_;
  std::vector<uint64_t> words_;  // a record's, reused: no allocation a sample
  std::optional<Listing> listing_;
};

DsoHits::DsoHits(bool callchains, uint64_t look_ahead_bytes)
    : impl_(std::make_unique<Impl>(callchains, look_ahead_bytes)) {}
DsoHits::~DsoHits() = default;

void DsoHits::add_table(std::span<const format::BuildIdEntry> entries) {
  Model& model = impl_->model_;
  for (const auto& e : entries) {
    const size_t dso = model.listed(format::machine_of(e.misc, static_cast<uint32_t>(e.pid)),
                                    e.filename, format::build_id_hex(e));
    if (impl_->in_table_.size() <= dso) impl_->in_table_.resize(dso + 1);
    if (!impl_->in_table_[dso]) impl_->file_table_.push_back(dso);
    impl_->in_table_[dso] = true;
  }
  impl_->listing_.reset();
}

void DsoHits::add_entries(std::span<const format::BuildIdEntry> entries) {
  Model& model = impl_->model_;
  for (const auto& e : entries) {
    model.listed(format::machine_of(e.misc, static_cast<uint32_t>(e.pid)), e.filename,
                 format::build_id_hex(e));
  }
  impl_->listing_.reset();
}

absl::Status DsoHits::add(const transform::RecordRef& r, const transform::Session& s) {
  if (r.trailing) return absl::OkStatus();
  impl_->listing_.reset();
  Model& model = impl_->model_;
  auto& ordered = impl_->ordered_;
  const auto time = [&] { return transform::record_time(r, s); };
  switch (r.header.type) {
    case format::kMmap:
    case format::kMmap2: {
      auto e = map_event(model, r, s, impl_->words_);
      if (!e.ok()) return e.status();
      ordered.add(time(), *e, impl_->words_);
      break;
    }
    case format::kFork: {
      auto e = fork_event(r, s);
      if (!e.ok()) return e.status();
      ordered.add(time(), *e);
      break;
    }
    case format::kSample: {
      Event e;
      std::optional<uint64_t> at;
      auto known = sample_event(r, s, impl_->callchains_, e, at, impl_->words_);
      if (!known.ok()) return known.status();
      if (*known) ordered.add(at, e, impl_->words_);
      break;
    }
    case format::kComm: {
      if ((r.header.misc & format::kMiscCommExec) == 0) break;
      auto e = exec_event(r, s);
      if (!e.ok()) return e.status();
      ordered.add(time(), *e);
      break;
    }
    case format::kFinishedRound:
    case format::kFinishedInit:
      ordered.round();
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

void DsoHits::finish() {
  impl_->ordered_.finish();
  impl_->listing_.reset();
}

const std::vector<DsoBuildId>& DsoHits::dsos() const { return impl_->listing().dsos; }

bool DsoHits::was_hit(size_t dso) const { return impl_->listing().hits[dso]; }

uint64_t DsoHits::samples(size_t dso) const { return impl_->listing().samples[dso]; }

uint64_t DsoHits::total_samples() const { return impl_->model_.total_samples(); }

uint64_t DsoHits::early_flushes() const { return impl_->ordered_.early_flushes(); }

bool DsoHits::was_hit(uint16_t misc, uint32_t pid, std::string_view filename) const {
  const uint64_t machine = format::machine_of(misc, pid);
  const std::vector<size_t> idless = impl_->model_.idless(machine, dso_name(machine, filename));
  return std::any_of(idless.begin(), idless.end(),
                     [&](size_t d) { return impl_->model_.was_hit(d); });
}

}  // namespace pdfix::inspect
