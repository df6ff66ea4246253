// Errors as values. Every message about the input names the byte offset it concerns, so a user can
// look at the file with `pdfix dump` or a hex viewer and see what is wrong.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pdfix::format {

template <typename... Args>
absl::Status malformed_at(uint64_t offset, const Args&... what) {
  return absl::InvalidArgumentError(absl::StrCat("offset 0x", absl::Hex(offset), ": ", what...));
}

}  // namespace pdfix::format
