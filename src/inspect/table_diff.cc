#include "inspect/table_diff.h"

#include <algorithm>

#include "format/map_kind.h"
#include "format/record_type.h"

namespace pdfix::inspect {

using format::BuildIdEntry;

namespace {

bool same_entry(const BuildIdEntry& a, const BuildIdEntry& b) {
  return a.pid == b.pid && (a.misc & format::kCpuModeMask) == (b.misc & format::kCpuModeMask) &&
         a.filename == b.filename && format::build_id_hex(a) == format::build_id_hex(b);
}

}  // namespace

std::vector<BuildIdEntry> added_entries(std::vector<BuildIdEntry> before,
                                        const std::vector<BuildIdEntry>& after) {
  std::vector<BuildIdEntry> added;
  for (const BuildIdEntry& e : after) {
    auto it = std::find_if(before.begin(), before.end(),
                           [&](const BuildIdEntry& b) { return same_entry(b, e); });
    if (it != before.end()) {
      before.erase(it);
    } else {
      added.push_back(e);
    }
  }
  return added;
}

std::map<int32_t, std::string> kernel_entries(const std::vector<BuildIdEntry>& table) {
  std::map<int32_t, std::string> first;
  for (const BuildIdEntry& e : table) {
    if (!format::is_kernel_mode(e.misc) || format::looks_like_module_file(e.filename)) continue;
    first.emplace(e.pid, e.filename);
  }
  return first;
}

}  // namespace pdfix::inspect
