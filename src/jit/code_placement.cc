#include "jit/code_placement.h"

#include "absl/container/flat_hash_map.h"

namespace pdfix::jit {

std::vector<Placement> place_code(const JitDump& dump, std::span<const uint64_t> offsets) {
  std::vector<Placement> placed;
  // The load each code index names, by the dump's order, which is its time order.
  absl::flat_hash_map<uint64_t, size_t> load_of_index;
  size_t next_move = 0;
  auto place_moves_until = [&](uint64_t time) {
    for (; next_move < dump.moves.size() && dump.moves[next_move].timestamp <= time; ++next_move) {
      const CodeMove& mv = dump.moves[next_move];
      auto it = load_of_index.find(mv.code_index);
      if (it == load_of_index.end() || mv.code_size == 0) continue;
      placed.push_back({mv.timestamp, mv.tid, mv.new_code_addr, mv.code_size, offsets[it->second]});
    }
  };
  for (size_t i = 0; i < dump.loads.size() && i < offsets.size(); ++i) {
    const CodeLoad& l = dump.loads[i];
    place_moves_until(l.timestamp);
    load_of_index[l.code_index] = i;
    if (l.code.empty()) continue;
    placed.push_back({l.timestamp, l.tid, l.code_addr, l.code.size(), offsets[i]});
  }
  place_moves_until(UINT64_MAX);
  return placed;
}

}  // namespace pdfix::jit
