// What compat tells: what it rewrote for the older perf, for people and for scripts (JSON).
#include "absl/strings/str_join.h"
#include "llvm/Support/JSON.h"
#include "passes/compat.h"

namespace pdfix::passes {

llvm::json::Object Compat::report_json() const {
  if (!target_) return llvm::json::Object{{"for", nullptr}};
  llvm::json::Object dropped;
  for (const auto& [type, n] : report_.dropped_records) dropped[type] = static_cast<int64_t>(n);
  llvm::json::Array features;
  for (const auto& f : report_.dropped_features) features.push_back(f);
  return llvm::json::Object{
      {"for", report_.target},
      {"attrs_shrunk", static_cast<int64_t>(report_.attrs_shrunk)},
      {"attr_size", llvm::json::Object{{"from", static_cast<int64_t>(report_.attr_size_from)},
                                       {"to", static_cast<int64_t>(report_.attr_size_to)}}},
      {"compression", report_.compression},
      {"dropped_records", std::move(dropped)},
      {"dropped_features", std::move(features)},
      {"build_id_maps_made_plain", static_cast<int64_t>(report_.build_id_maps_made_plain)},
      {"table_entries_added", static_cast<int64_t>(report_.table_entries_added)},
      {"callchains_stitched", static_cast<int64_t>(report_.callchains_stitched)},
      {"callchains_cut", static_cast<int64_t>(report_.callchains_cut)},
      {"early_flushes", static_cast<int64_t>(report_.early_flushes)}};
}

void Compat::report_text(std::ostream& out, bool /*verbose*/) const {
  const CompatReport& r = report_;
  if (r.target.empty()) return;
  out << "pdfix compat: for perf " << r.target << "\n";
  if (r.attrs_shrunk > 0) {
    out << "  " << r.attrs_shrunk << " event attr(s) shrunk from " << r.attr_size_from << " to "
        << r.attr_size_to << " bytes (the fields dropped were zero)\n";
  }
  if (r.compression != "kept") out << "  compressed data written as " << r.compression << "\n";
  for (const auto& [type, n] : r.dropped_records) {
    out << "  " << n << " " << type << " record(s) dropped: perf " << r.target
        << " does not know the type\n";
  }
  if (!r.dropped_features.empty()) {
    out << "  feature sections dropped: " << absl::StrJoin(r.dropped_features, ", ") << "\n";
  }
  if (r.build_id_maps_made_plain > 0) {
    out << "  " << r.build_id_maps_made_plain
        << " MMAP2 record(s) with a build-id made plain MMAP2; " << r.table_entries_added
        << " id(s) added to the build-id table\n";
  }
  if (r.callchains_stitched > 0 || r.callchains_cut > 0) {
    out << "  " << r.callchains_stitched << " deferred user callchain(s) stitched into samples";
    if (r.callchains_cut > 0) out << "; " << r.callchains_cut << " never came (kernel part kept)";
    out << "\n";
  }
  out << transform::early_flush_note(r.early_flushes);
}

}  // namespace pdfix::passes
