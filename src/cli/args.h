// Command-line parsing for the verbs. Each verb declares its options; parse() fills them in.
// (Abseil flags are process-global and know no verbs, so each verb's options live here instead.)
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pdfix::cli {

struct Option {
  std::string name;        // "--json"
  std::string short_name;  // "-v", or empty
  bool takes_value = false;
  std::function<absl::Status(const std::string& value)> set;
};

// Splits `args` into options (as declared) and positional arguments. "--" ends options; "-" alone
// is positional (stdin/stdout). "--name=value" and "--name value" both work.
absl::StatusOr<std::vector<std::string>> parse_args(const std::vector<std::string>& args,
                                                    const std::vector<Option>& options);

}  // namespace pdfix::cli
