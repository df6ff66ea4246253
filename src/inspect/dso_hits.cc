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
#include "transform/time_order.h"

namespace pdfix::inspect {
namespace {

constexpr uint64_t kHost = format::kHostMachine;
using format::kSampleCallchain;
using format::kSampleIdentifier;
using format::kSampleRead;
using format::kSampleTid;
using format::kSampleTime;
// Callchain entries at or above this are context markers (PERF_CONTEXT_*), not addresses.
constexpr uint64_t kContextMax = static_cast<uint64_t>(-4095);
constexpr uint64_t kContextKernel = static_cast<uint64_t>(-128);
constexpr uint64_t kContextUser = static_cast<uint64_t>(-512);

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

struct Map {
  uint64_t end = 0;
  size_t dso = 0;
};
// Address -> map, maps never overlapping: a new map replaces what it covers, as in perf.
using Maps = std::map<uint64_t, Map>;

void insert(Maps& maps, uint64_t start, uint64_t end, size_t dso) {
  if (end <= start) end = UINT64_MAX;
  auto it = maps.upper_bound(start);
  if (it != maps.begin()) --it;
  while (it != maps.end() && it->first < end) {
    const uint64_t s = it->first;
    const Map m = it->second;
    if (m.end <= start) {
      ++it;
      continue;
    }
    it = maps.erase(it);
    if (s < start) maps[s] = {start, m.dso};
    if (m.end > end) maps[end] = {m.end, m.dso};
  }
  maps[start] = {end, dso};
}

std::optional<size_t> find(const Maps& maps, uint64_t ip) {
  auto it = maps.upper_bound(ip);
  if (it == maps.begin()) return std::nullopt;
  --it;
  if (ip < it->second.end) return it->second.dso;
  return std::nullopt;
}

// perf's machines, threads and DSOs, as far as telling hit DSOs apart needs them. An exited thread
// keeps its maps: perf drops it only after its last sample, and a new process of the same pid
// comes with a FORK, which replaces them.
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
  void listed(uint64_t machine, const std::string& name, const std::string& id) {
    std::vector<std::string>& ids = table_[{machine, name}];
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    dso(machine, name, id, true);
  }
  void hit(size_t dso) {
    hits_.resize(dsos_.size());
    hits_[dso] = true;
  }
  bool was_hit(size_t dso) const { return dso < hits_.size() && hits_[dso]; }
  // A sample whose own ip is in `dso` (none: in no DSO).
  void sampled(std::optional<size_t> dso) {
    ++total_samples_;
    if (!dso) return;
    samples_.resize(dsos_.size());
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

  Maps& kernel(uint64_t machine) { return kernel_[machine]; }
  void set_kernel_start(uint64_t machine, uint64_t start) { kernel_start_[machine] = start; }
  bool kernel_ip(uint64_t ip) const {
    auto it = kernel_start_.find(kHost);
    return it != kernel_start_.end() && it->second != 0 ? ip >= it->second : (ip >> 63) != 0;
  }

  // A thread's maps: a new thread of a known process shares the process's, a new process gets
  // its own.
  Maps& user(uint32_t pid, uint32_t tid) { return *group(pid, tid); }
  void fork(uint32_t pid, uint32_t tid, uint32_t ppid, uint32_t ptid) {
    std::shared_ptr<Maps> parent = group(ppid, ptid);
    threads_.erase({pid, tid});
    threads_[{pid, tid}] = pid == ppid ? parent : std::make_shared<Maps>(*parent);
  }

 private:
  std::shared_ptr<Maps> group(uint32_t pid, uint32_t tid) {
    auto it = threads_.find({pid, tid});
    if (it != threads_.end()) return it->second;
    std::shared_ptr<Maps> maps = tid == pid ? std::make_shared<Maps>() : group(pid, pid);
    threads_[{pid, tid}] = maps;
    return maps;
  }

  std::vector<DsoBuildId> dsos_;
  std::vector<uint64_t> machines_;
  std::map<std::pair<uint64_t, std::string>, std::vector<std::string>> table_;
  std::set<std::pair<uint64_t, std::string>> records_carry_;
  std::map<std::pair<uint64_t, std::string>, std::vector<size_t>> idless_;
  std::vector<bool> hits_;
  std::vector<uint64_t> samples_;
  uint64_t total_samples_ = 0;
  absl::flat_hash_map<std::tuple<uint64_t, std::string, std::string>, size_t> index_;
  std::map<uint64_t, Maps> kernel_;
  std::map<uint64_t, uint64_t> kernel_start_;
  std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<Maps>> threads_;
};

// What one record does to the model, decoded, waiting for its turn.
struct Event {
  enum class Kind { kMap, kFork, kSample } kind = Kind::kMap;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t ppid = 0;
  uint32_t ptid = 0;
  // kMap
  uint64_t machine = kHost;
  bool kernel = false;
  bool image = false;
  uint64_t start = 0;
  uint64_t end = 0;
  size_t dso = 0;
  // kSample: each address with the cpumode it is to be looked up in
  std::vector<std::pair<uint16_t, uint64_t>> ips;
};

std::optional<size_t> mark(Model& model, uint16_t mode, uint32_t pid, uint32_t tid, uint64_t ip) {
  std::optional<size_t> dso;
  if (mode == format::kCpuModeKernel) {
    dso = find(model.kernel(kHost), ip);
  } else if (mode == format::kCpuModeGuestKernel) {
    dso = find(model.kernel(format::machine_of(mode, pid)), ip);
  } else if (mode == format::kCpuModeUser) {
    dso = find(model.user(pid, tid), ip);
    // perf looks a user-mode address up among the kernel's maps when no user map has it.
    if (!dso && model.kernel_ip(ip)) dso = find(model.kernel(kHost), ip);
  }
  if (dso) model.hit(*dso);
  return dso;
}

void apply(Model& model, const Event& e) {
  switch (e.kind) {
    case Event::Kind::kMap:
      if (e.kernel) {
        if (e.image) model.set_kernel_start(e.machine, e.start);
        insert(model.kernel(e.machine), e.start, e.end, e.dso);
      } else if (e.machine == kHost) {
        insert(model.user(e.pid, e.tid), e.start, e.end, e.dso);
      }
      break;
    case Event::Kind::kFork:
      model.fork(e.pid, e.tid, e.ppid, e.ptid);
      break;
    case Event::Kind::kSample:
      for (size_t i = 0; i < e.ips.size(); ++i) {
        const auto dso = mark(model, e.ips[i].first, e.pid, e.tid, e.ips[i].second);
        if (i == 0) model.sampled(dso);
      }
      break;
  }
}

absl::StatusOr<Event> map_event(Model& model, const transform::RecordRef& r,
                                const transform::Session& s) {
  auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  Event e;
  e.kind = Event::Kind::kMap;
  e.pid = m->pid;
  e.tid = m->tid;
  const uint16_t mode = m->misc & format::kCpuModeMask;
  e.machine = format::machine_of(m->misc, m->pid);
  e.kernel = mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel;
  e.image = format::is_kernel_image_name(m->filename);
  const std::string name = dso_name(e.machine, m->filename);
  if (m->has_build_id()) {
    model.carries(e.machine, name);
    e.dso = model.dso(e.machine, name,
                      format::build_id_hex({0, 0, 0, m->build_id, m->build_id_size, ""}), true);
    model.mapped_by(e.dso, *m);
  } else {
    const bool inode = m->is_mmap2 && m->ino != 0;
    e.dso = model.dso(e.machine, name,
                      inode ? absl::StrCat("ino:", m->maj, ":", m->min, ":", m->ino) : "", false);
    model.mapped_by(e.dso, *m);
  }
  e.start = m->start;
  e.end = m->start + m->len < m->start ? UINT64_MAX : m->start + m->len;
  return e;
}

absl::StatusOr<Event> fork_event(const transform::RecordRef& r, const transform::Session& s) {
  auto t = format::decode_task(r.bytes, s.endian(), r.offset);
  if (!t.ok()) return t.status();
  Event e;
  e.kind = Event::Kind::kFork;
  e.pid = t->pid;
  e.tid = t->tid;
  e.ppid = t->ppid;
  e.ptid = t->ptid;
  return e;
}

absl::StatusOr<std::optional<Event>> sample_event(const transform::RecordRef& r,
                                                  const transform::Session& s, bool callchain) {
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr) return std::nullopt;
  const uint64_t st = attr->sample_type;
  auto head = format::decode_sample_head(r.bytes, s.endian(), st, r.offset);
  if (!head.ok()) return head.status();
  Event e;
  e.kind = Event::Kind::kSample;
  e.pid = head->pid;
  e.tid = head->tid;
  const uint16_t mode = r.header.misc & format::kCpuModeMask;
  e.ips.emplace_back(mode, head->ip);
  // A READ group before the callchain has a layout of its own; such samples count by ip only.
  if (!callchain || (st & kSampleCallchain) == 0 || (st & kSampleRead) != 0) return e;
  // IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD come first, 8 bytes each.
  size_t pos = 8;
  for (uint64_t bit :
       {kSampleIdentifier, format::kSampleIp, kSampleTid, kSampleTime, format::kSampleAddr,
        format::kSampleId, format::kSampleStreamId, format::kSampleCpu, format::kSamplePeriod}) {
    if (st & bit) pos += 8;
  }
  if (pos + 8 > r.bytes.size()) return e;
  const uint64_t nr = s.endian().u64(r.bytes.data() + pos);
  pos += 8;
  if (nr > (r.bytes.size() - pos) / 8) return e;
  uint16_t context = mode;
  for (uint64_t i = 0; i < nr; ++i) {
    const uint64_t ip = s.endian().u64(r.bytes.data() + pos + 8 * i);
    if (ip >= kContextMax) {
      if (ip == kContextKernel) context = format::kCpuModeKernel;
      if (ip == kContextUser) context = format::kCpuModeUser;
      continue;
    }
    e.ips.emplace_back(context, ip);
  }
  return e;
}

}  // namespace

class DsoHits::Impl {
 public:
  explicit Impl(bool callchains)
      : callchains_(callchains), ordered_([this](Event& e) { apply(model_, e); }) {}
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
    for (size_t i = 0; i < model_.dsos().size(); ++i) {
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
  bool callchains_;
  Model model_;
  transform::TimeOrder<Event> ordered_;
  std::optional<Listing> listing_;
};

DsoHits::DsoHits(bool callchains) : impl_(std::make_unique<Impl>(callchains)) {}
DsoHits::~DsoHits() = default;

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
      auto e = map_event(model, r, s);
      if (!e.ok()) return e.status();
      ordered.add(time(), *std::move(e));
      break;
    }
    case format::kFork: {
      auto e = fork_event(r, s);
      if (!e.ok()) return e.status();
      ordered.add(time(), *std::move(e));
      break;
    }
    case format::kSample: {
      auto e = sample_event(r, s, impl_->callchains_);
      if (!e.ok()) return e.status();
      if (*e) ordered.add(time(), std::move(**e));
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

bool DsoHits::was_hit(uint16_t misc, uint32_t pid, std::string_view filename) const {
  const uint64_t machine = format::machine_of(misc, pid);
  const std::vector<size_t> idless = impl_->model_.idless(machine, dso_name(machine, filename));
  return std::any_of(idless.begin(), idless.end(),
                     [&](size_t d) { return impl_->model_.was_hit(d); });
}

}  // namespace pdfix::inspect
