// A /proc/modules listing saved on the recording host: where each module was loaded and how much
// memory it took, the best evidence of a module map's extent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace pdfix::resolve {

struct LoadedModule {
  uint64_t address = 0;
  uint64_t size = 0;
};

// Module name ('-' read as '_', as the kernel does) -> where it sits. Lines read
// "name size refs deps state address [taint]"; entries whose address is hidden (printed as 0 when
// kptr_restrict is set) are left out. A malformed line is an error naming its line number.
using ProcModules = absl::flat_hash_map<std::string, LoadedModule>;
absl::StatusOr<ProcModules> parse_proc_modules(std::string_view text);

}  // namespace pdfix::resolve
