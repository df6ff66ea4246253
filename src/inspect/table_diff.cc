#include "inspect/table_diff.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "format/map_kind.h"
#include "format/record_type.h"

namespace pdfix::inspect {

using format::BuildIdEntry;

namespace {

bool same_entry(const BuildIdEntry& a, const BuildIdEntry& b) {
  return a.pid == b.pid && (a.misc & format::kCpuModeMask) == (b.misc & format::kCpuModeMask) &&
         a.filename == b.filename && format::build_id_hex(a) == format::build_id_hex(b);
}

}  // namespace

std::vector<BuildIdEntry> added_entries(std::vector<BuildIdEntry> before,
                                        const std::vector<BuildIdEntry>& after) {
  std::vector<BuildIdEntry> added;
  for (const BuildIdEntry& e : after) {
    auto it = std::find_if(before.begin(), before.end(),
                           [&](const BuildIdEntry& b) { return same_entry(b, e); });
    if (it != before.end()) {
      before.erase(it);
    } else {
      added.push_back(e);
    }
  }
  return added;
}

std::map<int32_t, std::string> kernel_entries(const std::vector<BuildIdEntry>& table) {
  std::map<int32_t, std::string> first;
  for (const BuildIdEntry& e : table) {
    if (!format::is_kernel_mode(e.misc) || format::looks_like_module_file(e.filename)) continue;
    first.emplace(e.pid, e.filename);
  }
  return first;
}

std::vector<TableFinding> table_findings(const format::BuildIdTable& table, uint64_t table_offset,
                                         bool pipe, const std::vector<PassTable>& history,
                                         std::vector<TableInsert> added) {
  using Severity = Finding::Severity;
  std::vector<TableFinding> out;
  const auto add = [&](uint32_t part, Finding f) { out.push_back({part, std::move(f), ""}); };
  const auto note_once = [&](std::string once, uint32_t part, Finding f) {
    out.push_back({part, std::move(f), std::move(once)});
  };
  std::vector<BuildIdEntry> prev = table.entries;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& [by, entries] = history[i];
    if (i == 0 && table.sizes_from_6_12_0) {
      add(0, {Severity::kError, table_offset, "BUILD_ID feature",
              "entry sizes as perf 6.12.0 wrote them: every other reader misreads the table", by});
    }
    for (BuildIdEntry& e : added_entries(prev, entries)) {
      added.push_back({std::move(e), by, table_offset, 0});
    }
    // A user file's entry taken out: perf read this host's file at the path, and no map of the
    // path was that file.
    for (const BuildIdEntry& e : added_entries(entries, prev)) {
      if (format::is_kernel_mode(e.misc)) continue;
      add(0, {Severity::kError, e.offset == 0 ? table_offset : e.offset, "BUILD_ID feature",
              absl::StrCat("the build-id table gives ", e.filename, " ", format::build_id_hex(e),
                           ", the id of this host's file at that path, but no map of it is that "
                           "file (a chroot's or container's file, or one replaced during the "
                           "run): perf gives its maps another file's id"),
              by});
    }
    if (kernel_entries(prev) != kernel_entries(entries) && added_entries(prev, entries).empty()) {
      add(0, {Severity::kError, table_offset, "BUILD_ID feature",
              "the kernel's entry is not the first kernel-mode entry: perf takes another entry's "
              "id for the kernel",
              by});
    }
    prev = entries;
  }
  const std::map<int32_t, std::string> kernels = kernel_entries(table.entries);
  for (const TableInsert& in : added) {
    const BuildIdEntry& e = in.entry;
    const std::string record =
        in.offset == table_offset && !pipe ? "BUILD_ID feature" : "HEADER_BUILD_ID";
    if (!format::is_kernel_tag(e.filename)) {
      note_once("table " + e.filename, in.part,
                {Severity::kNote, in.offset, record,
                 absl::StrCat("the build-id table has no entry for ", e.filename, "; fix adds ",
                              format::build_id_hex(e)),
                 in.by});
      continue;
    }
    auto filed = std::find_if(table.entries.begin(), table.entries.end(), [&](const auto& b) {
      return b.pid == e.pid && format::is_kernel_mode(b.misc) &&
             format::build_id_hex(b) == format::build_id_hex(e);
    });
    auto kernel = kernels.find(e.pid);
    if (filed != table.entries.end()) {
      add(in.part, {Severity::kError, in.offset, record,
                    absl::StrCat("the kernel's build-id ", format::build_id_hex(e),
                                 " is filed under ", filed->filename, ", not ", e.filename,
                                 ": readers that look for the tag find no kernel"),
                    in.by});
    } else if (kernel != kernels.end()) {
      add(in.part, {Severity::kError, in.offset, record,
                    absl::StrCat("perf takes ", kernel->second,
                                 " for the kernel; the kernel's id is ", format::build_id_hex(e)),
                    in.by});
    } else {
      add(in.part, {Severity::kNote, in.offset, record,
                    absl::StrCat("the build-id table has no kernel entry; fix adds ", e.filename,
                                 " ", format::build_id_hex(e), " (the kernel map's id)"),
                    in.by});
    }
  }
  return out;
}

}  // namespace pdfix::inspect
