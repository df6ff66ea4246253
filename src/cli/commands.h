// The pdfix verbs. Each takes its arguments (after the verb) and returns the exit status:
// 0 success, 2 error (bad usage or bad input; one line on stderr says which).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pdfix::cli {

using Args = std::vector<std::string>;

int cmd_copy(const Args& args);
int cmd_info(const Args& args);
int cmd_dump(const Args& args);
int cmd_inject(const Args& args);
int cmd_fix_module_sizes(const Args& args);
int cmd_tag_kernel(const Args& args);
int cmd_fix(const Args& args);
int cmd_buildid_list(const Args& args);

// Prints "pdfix: <message>" and returns the error exit status.
int fail(const absl::Status& status);
int usage_error(const std::string& message, const char* verb);

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 2;

}  // namespace pdfix::cli
