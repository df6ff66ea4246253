#include "profile/coverage.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace pdfix::profile {

std::vector<MappingCoverage> leaf_coverage(const Profile& profile, Locations& locations) {
  std::vector<MappingCoverage> out;
  absl::flat_hash_map<std::string, size_t> by_binary;
  // Each mapping's binary is looked up once, not once a stack (tens of thousands).
  constexpr size_t kNotSeen = SIZE_MAX;
  std::vector<size_t> of_mapping(profile.mappings.size() + 1, kNotSeen);
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const std::span<const uint64_t> frames = frames_of(profile.stacks.key(i));
    if (frames.size() < 2) continue;
    const Location& leaf = locations.all()[locations.of(frames.first(2)).front()];
    size_t& slot = of_mapping[leaf.mapping];
    if (slot == kNotSeen) {
      std::string binary;
      if (leaf.mapping != 0) {
        const Mapping& m = profile.mappings[leaf.mapping - 1];
        binary = absl::StrCat(m.file, "\n", m.build_id, "\n", m.proven_file);
      }
      auto [it, added] = by_binary.try_emplace(binary, out.size());
      if (added) out.push_back({.mapping = leaf.mapping, .first_stack = i});
      slot = it->second;
    }
    MappingCoverage& c = out[slot];
    const uint64_t n = profile.stacks.totals(i).samples;
    c.samples += n;
    c.named += leaf.lines.empty() ? 0 : n;
  }
  // Ties in the order first seen: the same recording, the same summary.
  std::sort(out.begin(), out.end(), [](const MappingCoverage& a, const MappingCoverage& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.first_stack < b.first_stack;
  });
  return out;
}

}  // namespace pdfix::profile
