#include "profile/kallsyms.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace pdfix::profile {

Kallsyms::Kallsyms(std::string text) : text_(std::move(text)) {
  std::string_view rest = text_;
  symbols_.reserve(static_cast<size_t>(std::count(rest.begin(), rest.end(), '\n')) + 1);
  // "ffffffff81000000 T _text", then for a module's symbol "\t[name]".
  while (!rest.empty()) {
    const size_t eol = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(std::min(eol + 1, rest.size()));
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || line.size() < space + 4 || line[space + 2] != ' ') {
      continue;
    }
    uint64_t address = 0;
    const std::string_view hex = line.substr(0, space);
    if (std::from_chars(hex.data(), hex.data() + hex.size(), address, 16).ptr !=
        hex.data() + hex.size()) {
      continue;
    }
    const char type = line[space + 1];
    std::string_view name = line.substr(space + 3);
    name = name.substr(0, name.find('\t'));
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    const size_t at = static_cast<size_t>(name.data() - text_.data());
    if (at + name.size() > UINT32_MAX) break;  // no kernel's is 4 GiB: not a kallsyms
    symbols_.push_back({address, static_cast<uint32_t>(at), static_cast<uint32_t>(name.size())});
  }
  // Aliases at one address (memcpy, __memcpy, __pi_memcpy): the last the text lists, the one perf
  // names. Its sizes run each symbol up to the next one's address, which leaves the earlier
  // aliases none, and perf keeps the alias with a size (symbols__fixup_duplicate): a frame has
  // the same name in the profile as in perf report.
  // The kernel's own come sorted; loaded modules' follow, each in its own order.
  if (!std::is_sorted(symbols_.begin(), symbols_.end())) {
    std::sort(symbols_.begin(), symbols_.end());
  }
}

void Kallsyms::place(std::string_view ref, uint64_t ref_at) {
  auto here = std::find_if(symbols_.begin(), symbols_.end(),
                           [&](const Symbol& s) { return name_of(s) == ref; });
  placed_ = here != symbols_.end();
  if (!placed_) {
    symbols_.clear();
    return;
  }
  shift_ = ref_at - here->address;
}

std::optional<std::string> Kallsyms::function_at(uint64_t address) const {
  if (!placed_) return std::nullopt;
  const uint64_t here = address - shift_;
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), here,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return std::nullopt;
  return std::string(name_of(*std::prev(it)));
}

}  // namespace pdfix::profile
