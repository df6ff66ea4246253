#include "unwind/process_maps.h"

namespace pdfix::unwind {

void ProcessMaps::map(uint32_t pid, const Mapping& m) {
  if (m.end <= m.start) return;
  auto& maps = by_pid_[pid];
  // Cut what the new mapping covers out of the old ones, keeping the parts on either side.
  auto it = maps.lower_bound(m.start);
  if (it != maps.begin() && std::prev(it)->second.end > m.start) --it;
  while (it != maps.end() && it->second.start < m.end) {
    const Mapping old = it->second;
    it = maps.erase(it);
    if (old.start < m.start) {
      Mapping left = old;
      left.end = m.start;
      maps.emplace(left.start, left);
    }
    if (old.end > m.end) {
      Mapping right = old;
      right.start = m.end;
      right.pgoff = old.pgoff + (m.end - old.start);
      it = maps.emplace(right.start, right).first;
      ++it;
    }
  }
  maps.emplace(m.start, m);
}

void ProcessMaps::fork(uint32_t parent, uint32_t child) {
  if (parent == child) return;  // a thread shares its process's maps
  auto it = by_pid_.find(parent);
  if (it == by_pid_.end()) {
    by_pid_.erase(child);
    return;
  }
  auto copy = it->second;
  by_pid_[child] = std::move(copy);
}

void ProcessMaps::exec(uint32_t pid) { by_pid_.erase(pid); }

const ProcessMaps::Mapping* ProcessMaps::find(uint32_t pid, uint64_t addr) const {
  auto p = by_pid_.find(pid);
  if (p == by_pid_.end()) return nullptr;
  auto it = p->second.upper_bound(addr);
  if (it == p->second.begin()) return nullptr;
  --it;
  return addr < it->second.end ? &it->second : nullptr;
}

}  // namespace pdfix::unwind
