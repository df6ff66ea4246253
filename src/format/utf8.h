// Names from a recording (comms, file names) are bytes, not always UTF-8; JSON and terminals want
// UTF-8. Invalid bytes are shown explicitly, the same way in every build.
#pragma once

#include <string>
#include <string_view>

namespace pdfix::format {

// `s` with each byte that is not part of a valid UTF-8 sequence written as "\xNN".
std::string escape_invalid_utf8(std::string_view s);

}  // namespace pdfix::format
