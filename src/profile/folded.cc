#include "profile/folded.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

namespace pdfix::profile {
namespace {

// A frame's names, outermost first; an unnamed frame is its file's base name in brackets, as perf
// prints a DSO, or [unknown] where no map covered it.
void append_names(const Profile& profile, const Location& l, std::string& out) {
  if (!l.lines.empty()) {
    for (auto it = l.lines.rbegin(); it != l.lines.rend(); ++it) {
      absl::StrAppend(&out, ";", it->function);
    }
    return;
  }
  if (l.mapping == 0) {
    absl::StrAppend(&out, ";[unknown]");
    return;
  }
  const std::string& file = profile.mappings[l.mapping - 1].file;
  if (file.starts_with("[")) {
    absl::StrAppend(&out, ";", file);
    return;
  }
  const size_t slash = file.rfind('/');
  absl::StrAppend(&out, ";[", slash == std::string::npos ? file : file.substr(slash + 1), "]");
}

}  // namespace

std::string to_folded(const Profile& profile, Locations& locations, uint64_t event) {
  // Sorted, so that the same recording gives the same bytes.
  std::map<std::string, uint64_t> lines;
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const std::span<const uint64_t> key = profile.stacks.key(i);
    if (event_of(key) != event) continue;
    // The labels first, as stackcollapse-perf.pl writes them: comm-pid/tid.
    std::string line;
    if (profile.labels.comm) {
      const uint64_t comm = comm_of(key);
      line = comm == 0 ? "[unknown]" : profile.comms[comm - 1];
    }
    if (const uint64_t pid = pid_of(key); pid != 0) {
      absl::StrAppend(&line, line.empty() ? "" : "-", pid - 1);
    }
    if (const uint64_t tid = tid_of(key); tid != 0) {
      absl::StrAppend(&line, line.empty() ? "" : "/", tid - 1);
    }
    const std::span<const uint32_t> frames = locations.of(frames_of(key));
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      append_names(profile, locations.all()[*it], line);
    }
    // Without labels, the root frame begins the line.
    if (line.starts_with(";")) line.erase(0, 1);
    lines[line] += profile.stacks.totals(i).samples;
  }
  std::string out;
  for (const auto& [stack, count] : lines) absl::StrAppend(&out, stack, " ", count, "\n");
  return out;
}

}  // namespace pdfix::profile
