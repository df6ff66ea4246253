// /tmp/perf-PID.map: the text file a JIT runtime writes for perf, one line per function:
// "START SIZE NAME", the two numbers in hex (with or without 0x).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pdfix::jit {

struct MapSymbol {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string_view name;
};

// The symbols of `text` (which must outlive them), in file order; lines that are no symbol (a
// cut-off last line, garbage) are skipped and counted in `skipped`.
std::vector<MapSymbol> parse_perf_map(std::string_view text, size_t& skipped);

}  // namespace pdfix::jit
