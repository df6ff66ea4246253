#include "resolve/proc_modules.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace pdfix::resolve {

absl::StatusOr<ProcModules> parse_proc_modules(std::string_view text) {
  ProcModules out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.empty()) continue;
    uint64_t size = 0;
    uint64_t address = 0;
    if (f.size() < 6 || !absl::SimpleAtoi(f[1], &size) || !absl::SimpleHexAtoi(f[5], &address)) {
      return absl::InvalidArgumentError(
          absl::StrCat("modules listing, line ", line_no,
                       ": expected 'name size refs deps state address', got '", line, "'"));
    }
    if (address == 0) continue;
    std::string name(f[0]);
    std::replace(name.begin(), name.end(), '-', '_');
    out[name] = {address, size};
  }
  return out;
}

}  // namespace pdfix::resolve
