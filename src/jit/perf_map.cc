#include "jit/perf_map.h"

#include <charconv>

namespace pdfix::jit {
namespace {

bool hex_field(std::string_view& line, uint64_t& value) {
  if (line.starts_with("0x") || line.starts_with("0X")) line.remove_prefix(2);
  auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), value, 16);
  if (ec != std::errc() || end == line.data() || end == line.data() + line.size() || *end != ' ') {
    return false;
  }
  line.remove_prefix(static_cast<size_t>(end - line.data()) + 1);
  return true;
}

}  // namespace

std::vector<MapSymbol> parse_perf_map(std::string_view text, size_t& skipped) {
  std::vector<MapSymbol> symbols;
  skipped = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    // A last line without its newline may have been cut off mid-write: its name is not whole.
    if (eol == std::string_view::npos) {
      ++skipped;
      break;
    }
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol + 1);
    MapSymbol s;
    if (!hex_field(line, s.start) || !hex_field(line, s.size) || line.empty() || s.size == 0 ||
        s.start + s.size < s.start) {
      ++skipped;
      continue;
    }
    s.name = line;
    symbols.push_back(s);
  }
  return symbols;
}

}  // namespace pdfix::jit
