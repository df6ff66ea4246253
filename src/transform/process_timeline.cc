#include "transform/process_timeline.h"

#include <algorithm>
#include <iterator>

#include "format/machine.h"
#include "format/record_type.h"

namespace pdfix::transform {

void ProcessTimeline::insert(Maps& maps, Map m) {
  auto it = maps.lower_bound(m.start);
  if (it != maps.begin() && std::prev(it)->second.end > m.start) --it;
  while (it != maps.end() && it->second.start < m.end) {
    const Map old = it->second;
    it = maps.erase(it);
    if (old.start < m.start) {
      Map left = old;
      left.end = m.start;
      maps.emplace(left.start, left);
    }
    if (old.end > m.end) {
      Map right = old;
      right.start = m.end;
      right.pgoff = old.pgoff + (m.end - old.start);
      it = std::next(maps.emplace(right.start, right).first);
    }
  }
  maps.emplace(m.start, m);
}

void ProcessTimeline::map(uint16_t misc, uint32_t pid, const Map& m,
                          std::optional<uint64_t> kernel_start) {
  const uint16_t mode = misc & format::kCpuModeMask;
  if (mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel) {
    const uint64_t machine = format::machine_of(misc, pid);
    Maps& maps = kernels_[machine];
    Map sized = m;
    if (sized.end <= sized.start) {
      auto next = maps.upper_bound(sized.start);
      sized.end = next == maps.end() ? UINT64_MAX : next->first;
    }
    if (kernel_start && machine == format::kHostMachine) kernel_start_ = *kernel_start;
    insert(maps, sized);
    kernels_changed_ = ++changes_;
    return;
  }
  if (format::is_guest_mode(misc) || m.end <= m.start) return;
  insert(own_maps(pid), m);
  changed_[pid] = ++changes_;
}

ProcessTimeline::Maps& ProcessTimeline::own_maps(uint32_t pid) {
  std::shared_ptr<Maps>& maps = processes_[pid];
  if (maps == nullptr) {
    maps = std::make_shared<Maps>();
  } else if (maps.use_count() > 1) {
    maps = std::make_shared<Maps>(*maps);
  }
  return *maps;
}

void ProcessTimeline::fork(uint32_t pid, uint32_t ppid) {
  if (pid == ppid) return;  // a thread: it shares its process's maps
  images_[pid] = ++images_begun_;
  changed_[pid] = ++changes_;
  auto parent = processes_.find(ppid);
  if (parent == processes_.end()) {
    processes_.erase(pid);
    return;
  }
  std::shared_ptr<Maps> shared = parent->second;  // before processes_ may grow
  processes_[pid] = std::move(shared);
}

void ProcessTimeline::exec(uint32_t pid) {
  processes_.erase(pid);
  images_[pid] = ++images_begun_;
  changed_[pid] = ++changes_;
}

uint64_t ProcessTimeline::version(uint32_t pid) const {
  auto it = changed_.find(pid);
  return std::max(it == changed_.end() ? 0 : it->second, kernels_changed_);
}

uint64_t ProcessTimeline::image(uint32_t pid) const {
  auto it = images_.find(pid);
  return it == images_.end() ? 0 : it->second;
}

const ProcessTimeline::Map* ProcessTimeline::find_in(const Maps& maps, uint64_t addr) {
  auto it = maps.upper_bound(addr);
  if (it == maps.begin()) return nullptr;
  --it;
  return addr < it->second.end ? &it->second : nullptr;
}

const ProcessTimeline::Map* ProcessTimeline::lowest(uint32_t pid) const {
  auto p = processes_.find(pid);
  return p == processes_.end() || p->second->empty() ? nullptr : &p->second->begin()->second;
}

bool ProcessTimeline::kernel_address(uint64_t addr) const {
  return kernel_start_ != 0 ? addr >= kernel_start_ : (addr >> 63) != 0;
}

const ProcessTimeline::Map* ProcessTimeline::find(uint16_t cpumode, uint32_t pid,
                                                  uint64_t addr) const {
  const uint16_t mode = cpumode & format::kCpuModeMask;
  if (mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel) {
    auto k = kernels_.find(format::machine_of(mode, pid));
    return k == kernels_.end() ? nullptr : find_in(k->second, addr);
  }
  if (mode != format::kCpuModeUser) return nullptr;
  if (auto p = processes_.find(pid); p != processes_.end()) {
    if (const Map* m = find_in(*p->second, addr)) return m;
  }
  if (!kernel_address(addr)) return nullptr;
  auto k = kernels_.find(format::kHostMachine);
  return k == kernels_.end() ? nullptr : find_in(k->second, addr);
}

}  // namespace pdfix::transform
