#include "cli/summary.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_os_ostream.h"

namespace pdfix::cli {
namespace {

std::string hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

}  // namespace

llvm::json::Object to_json(const passes::InjectReport& r) {
  llvm::json::Object reasons;
  for (const auto& [why, n] : r.left_by_reason) reasons[why] = static_cast<int64_t>(n);
  llvm::json::Array maps;
  for (const auto& m : r.maps) {
    llvm::json::Object o{{"filename", m.filename},
                         {"outcome", m.outcome},
                         {"detail", m.detail},
                         {"records", static_cast<int64_t>(m.records)}};
    if (!m.build_id.empty()) o["build_id"] = m.build_id;
    maps.push_back(std::move(o));
  }
  return llvm::json::Object{{"upgraded", static_cast<int64_t>(r.upgraded)},
                            {"had_build_id", static_cast<int64_t>(r.already)},
                            {"left_alone", static_cast<int64_t>(r.left)},
                            {"left_alone_by_reason", std::move(reasons)},
                            {"table_entries_added", static_cast<int64_t>(r.table_entries_added)},
                            {"maps", std::move(maps)}};
}

void print_text(const passes::InjectReport& r, bool verbose, std::ostream& out) {
  out << "pdfix inject: " << r.upgraded << " map records upgraded, " << r.already
      << " already had a build-id, " << r.left << " left alone; " << r.table_entries_added
      << " build-id table entries added\n";
  for (const auto& [why, n] : r.left_by_reason) out << "  left alone, " << why << ": " << n << "\n";
  for (const auto& m : r.maps) {
    if (!verbose && m.outcome != "left alone") continue;
    out << "  " << m.outcome << ": " << m.filename;
    if (!m.build_id.empty()) out << " " << m.build_id;
    out << " (" << m.detail << ", " << m.records << " record" << (m.records == 1 ? "" : "s")
        << ")\n";
  }
}

llvm::json::Object to_json(const passes::ModuleSizeReport& r) {
  llvm::json::Array changed;
  for (const auto& c : r.changed) {
    changed.push_back(llvm::json::Object{{"filename", c.filename},
                                         {"start", hex(c.start)},
                                         {"old_len", hex(c.old_len)},
                                         {"new_len", hex(c.new_len)},
                                         {"problem", c.problem},
                                         {"evidence", c.evidence}});
  }
  llvm::json::Array unresolved;
  for (const auto& u : r.unresolved) {
    unresolved.push_back(llvm::json::Object{{"filename", u.filename},
                                            {"start", hex(u.start)},
                                            {"len", hex(u.len)},
                                            {"problem", u.problem}});
  }
  return llvm::json::Object{{"module_maps", static_cast<int64_t>(r.module_maps)},
                            {"changed", std::move(changed)},
                            {"unresolved", std::move(unresolved)}};
}

void print_text(const passes::ModuleSizeReport& r, bool /*verbose*/, std::ostream& out) {
  if (r.changed.empty() && r.unresolved.empty()) {
    out << "pdfix fix-module-sizes: nothing to fix (" << r.module_maps << " module maps)\n";
    return;
  }
  out << "pdfix fix-module-sizes: " << r.changed.size() << " of " << r.module_maps
      << " module maps changed, " << r.unresolved.size() << " wrong but left alone\n";
  for (const auto& c : r.changed) {
    out << "  " << c.filename << " at " << hex(c.start) << ": len " << hex(c.old_len) << " -> "
        << hex(c.new_len) << " (" << (c.problem.empty() ? "" : c.problem + "; ") << "from "
        << c.evidence << ")\n";
  }
  for (const auto& u : r.unresolved) {
    out << "  left alone: " << u.filename << " at " << hex(u.start) << ", len " << hex(u.len) << " "
        << u.problem << ", and nothing tells its size\n";
  }
}

llvm::json::Object to_json(const passes::TagKernelReport& r) {
  llvm::json::Array machines;
  for (const auto& m : r.machines) {
    llvm::json::Object o{{"machine", m.machine}, {"outcome", m.outcome}, {"detail", m.detail}};
    if (!m.build_id.empty()) o["build_id"] = m.build_id;
    machines.push_back(std::move(o));
  }
  return llvm::json::Object{{"machines", std::move(machines)},
                            {"table_repaired", r.table_repaired},
                            {"entries_added", static_cast<int64_t>(r.entries_added)},
                            {"kernel_maps_given_id", static_cast<int64_t>(r.kernel_maps_given_id)}};
}

void print_text(const passes::TagKernelReport& r, bool /*verbose*/, std::ostream& out) {
  if (r.machines.empty()) {
    out << "pdfix tag-kernel: the build-id table has no kernel entry; nothing to tag\n";
  }
  for (const auto& m : r.machines) {
    out << "pdfix tag-kernel: " << m.machine << " kernel " << m.outcome;
    if (!m.build_id.empty()) out << " " << m.build_id;
    out << " (" << m.detail << ")\n";
  }
  if (r.table_repaired) {
    out << "  build-id table entry sizes repaired (written by perf 6.12.0)\n";
  }
  if (r.entries_added > 0) out << "  " << r.entries_added << " build-id table entries added\n";
  if (r.kernel_maps_given_id > 0) {
    out << "  " << r.kernel_maps_given_id << " kernel map record(s) given the kernel's build-id\n";
  }
}

void print_json(llvm::json::Value root, std::ostream& out) {
  llvm::raw_os_ostream os(out);
  os << llvm::formatv("{0:2}", root) << "\n";
}

}  // namespace pdfix::cli
