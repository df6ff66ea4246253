// The exit statuses: one meaning each, the same for every verb and for each chunk follow fixes
// (its journal keeps them). The README and the man page list them; each verb's EXIT STATUS section
// says when it returns which.
#pragma once

namespace pdfix {

inline constexpr int kExitOk = 0;          // the job was done
inline constexpr int kExitFixable = 1;     // check: `pdfix fix` would repair what was found
inline constexpr int kExitError = 2;       // not done: bad usage, bad input, a write failed
inline constexpr int kExitIncomplete = 3;  // done, but what was asked for is not all there

}  // namespace pdfix
