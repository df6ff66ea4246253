#include "cli/args.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace pdfix::cli {

absl::StatusOr<std::vector<std::string>> parse_args(const std::vector<std::string>& args,
                                                    const std::vector<Option>& options) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    const Option* opt = nullptr;
    for (const auto& o : options) {
      if (o.name == name || (!o.short_name.empty() && o.short_name == name)) opt = &o;
    }
    if (opt == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown option ", name));
    if (opt->takes_value && !value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
      value = args[++i];
    }
    if (!opt->takes_value && value) {
      return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
    }
    if (auto s = opt->set(value.value_or("")); !s.ok()) return s;
  }
  return positional;
}

}  // namespace pdfix::cli
