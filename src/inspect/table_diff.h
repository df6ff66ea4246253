// What two build-id tables (the recording's, and one a pass made) differ in, as check reports it:
// the entries one adds, and the entry perf takes for each machine's kernel.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/feature.h"

namespace pdfix::inspect {

// Entries of `after` that `before` does not hold (as many times).
std::vector<format::BuildIdEntry> added_entries(std::vector<format::BuildIdEntry> before,
                                                const std::vector<format::BuildIdEntry>& after);

// The entry perf takes for the kernel of each machine: the first kernel-mode one that is no module.
std::map<int32_t, std::string> kernel_entries(const std::vector<format::BuildIdEntry>& table);

}  // namespace pdfix::inspect
