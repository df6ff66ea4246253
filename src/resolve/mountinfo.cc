#include "resolve/mountinfo.h"

#include "absl/strings/str_cat.h"

namespace pdfix::resolve {
namespace {

// The kernel writes space, tab, newline and backslash in paths as \ooo octal (fs/proc_namespace.c
// mangle()); overlayfs writes a ',' or ':' inside a layer's path behind a backslash.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    const auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out +=
          static_cast<char>(((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[++i];
    }
  }
  return out;
}

// Splits at `sep` where it is not behind a backslash (the kernel writes separators in paths as
// octal escapes, so only overlayfs's options need the distinction).
std::vector<std::string_view> split_unescaped(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == sep) {
      parts.push_back(s.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  parts.push_back(s.substr(begin));
  return parts;
}

}  // namespace

namespace {

// One line of a mountinfo table: its device ("maj:min") and the mount; nullopt for what is not a
// mount line.
std::optional<std::pair<std::string_view, Mount>> parse_line(std::string_view line) {
  // "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER-OPTIONS"
  const size_t dash = line.find(" - ");
  if (dash == std::string_view::npos) return std::nullopt;
  const std::vector<std::string_view> head = split_unescaped(line.substr(0, dash), ' ');
  const std::vector<std::string_view> tail = split_unescaped(line.substr(dash + 3), ' ');
  if (head.size() < 5 || tail.empty()) return std::nullopt;
  Mount m{.type = std::string(tail[0]), .point = unescape(head[4]), .root = unescape(head[3])};
  if (m.type == "overlay" && tail.size() >= 3) {
    std::vector<std::string> lower;
    for (std::string_view opt : split_unescaped(tail[2], ',')) {
      if (opt.starts_with("upperdir=")) {
        m.layers.insert(m.layers.begin(), unescape(opt.substr(9)));
      } else if (opt.starts_with("lowerdir=")) {
        for (std::string_view dir : split_unescaped(opt.substr(9), ':')) {
          lower.push_back(unescape(dir));
        }
      }
    }
    m.layers.insert(m.layers.end(), lower.begin(), lower.end());
  }
  return std::make_pair(head[2], std::move(m));
}

}  // namespace

std::optional<Mount> find_mount(std::string_view table, uint32_t maj, uint32_t min) {
  const std::string dev = absl::StrCat(maj, ":", min);
  for (std::string_view line : split_unescaped(table, '\n')) {
    auto parsed = parse_line(line);
    if (parsed && parsed->first == dev) return std::move(parsed->second);
  }
  return std::nullopt;
}

std::vector<Mount> whole_overlays(std::string_view table) {
  std::vector<Mount> out;
  for (std::string_view line : split_unescaped(table, '\n')) {
    auto parsed = parse_line(line);
    if (parsed && parsed->second.type == "overlay" && parsed->second.root == "/") {
      out.push_back(std::move(parsed->second));
    }
  }
  return out;
}

}  // namespace pdfix::resolve
