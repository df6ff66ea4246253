// What two build-id tables (the recording's, and one a pass made) differ in, as check reports it:
// the entries one adds, the entry perf takes for each machine's kernel, and what check says of the
// table the passes leave.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/feature.h"
#include "inspect/check.h"

namespace pdfix::inspect {

// Entries of `after` that `before` does not hold (as many times).
std::vector<format::BuildIdEntry> added_entries(std::vector<format::BuildIdEntry> before,
                                                const std::vector<format::BuildIdEntry>& after);

// The entry perf takes for the kernel of each machine: the first kernel-mode one that is no module.
std::map<int32_t, std::string> kernel_entries(const std::vector<format::BuildIdEntry>& table);

// An entry a pass inserted as a HEADER_BUILD_ID record (a stream's, or ahead of the others).
struct TableInsert {
  format::BuildIdEntry entry;
  std::string by;  // the pass
  uint64_t offset = 0;
  uint32_t part = 0;
};
// The table a pass left, by the pass's name.
using PassTable = std::pair<std::string, std::vector<format::BuildIdEntry>>;

// A finding, and the key under which findings alike are told once (empty: each is told).
struct TableFinding {
  uint32_t part = 0;
  Finding finding;
  std::string once;
};

// What check says of the build-id table as read (`table`, at `table_offset`), the tables the passes
// left in turn (`history`) and the entries they inserted as records (`added`): entries the
// passes add or take out, a kernel entry perf would not take for the kernel, perf 6.12.0's sizes.
std::vector<TableFinding> table_findings(const format::BuildIdTable& table, uint64_t table_offset,
                                         bool pipe, const std::vector<PassTable>& history,
                                         std::vector<TableInsert> added);

}  // namespace pdfix::inspect
