// What inject-jit tells: each dump and map file made an ELF file, or why not, for people, for
// scripts (JSON) and for check (findings).
#include "format/utf8.h"
#include "llvm/Support/JSON.h"
#include "passes/inject_jit.h"

namespace pdfix::passes {
namespace {

std::string kind_name(JitReport::Source::Kind k) {
  return k == JitReport::Source::Kind::kJitdump ? "jitdump" : "perf map";
}

}  // namespace

std::vector<transform::PassFinding> InjectJit::findings() const {
  std::vector<transform::PassFinding> out;
  for (const auto& src : report_.sources) {
    transform::PassFinding f{.offset = src.offset, .part = src.part, .record = src.record};
    const std::string name = format::escape_invalid_utf8(src.name);
    if (src.found_at.empty()) {
      f.what = absl::StrCat("JIT code of process ", src.pid, ": its ", kind_name(src.kind), " ",
                            name, " cannot be used (", format::escape_invalid_utf8(src.problem),
                            "); its samples stay [unknown] (a copy: --jit-dir)");
    } else {
      f.repaired = true;
      f.what = absl::StrCat(
          "JIT code of process ", src.pid, ": its ", kind_name(src.kind), " ", name,
          " is read from ", format::escape_invalid_utf8(src.found_at), " now, and gone when the ",
          src.kind == JitReport::Source::Kind::kJitdump ? "dump" : "map file",
          " is; fix makes its ", src.functions, " functions an ELF file the maps name");
    }
    out.push_back(std::move(f));
  }
  return out;
}

llvm::json::Object InjectJit::report_json() const {
  llvm::json::Array sources;
  for (const auto& src : report_.sources) {
    llvm::json::Object o{{"kind", kind_name(src.kind)},
                         {"name", format::escape_invalid_utf8(src.name)},
                         {"pid", static_cast<int64_t>(src.pid)},
                         {"functions", static_cast<int64_t>(src.functions)},
                         {"maps", static_cast<int64_t>(src.maps)}};
    if (!src.found_at.empty()) o["found_at"] = format::escape_invalid_utf8(src.found_at);
    if (!src.problem.empty()) o["problem"] = format::escape_invalid_utf8(src.problem);
    if (!src.build_id.empty()) o["build_id"] = src.build_id;
    if (!src.elf.empty()) o["elf"] = format::escape_invalid_utf8(src.elf);
    sources.push_back(std::move(o));
  }
  llvm::json::Array not_found;
  for (const auto& m : report_.map_files_not_found) {
    llvm::json::Array looked_at;
    for (const std::string& path : m.looked_at) {
      looked_at.push_back(format::escape_invalid_utf8(path));
    }
    llvm::json::Object o{{"pid", static_cast<int64_t>(m.pid)}, {"looked_at", std::move(looked_at)}};
    if (!m.files_on.empty()) o["files_on"] = format::escape_invalid_utf8(m.files_on);
    not_found.push_back(std::move(o));
  }
  return llvm::json::Object{
      {"sources", std::move(sources)},
      {"map_files_not_found", std::move(not_found)},
      {"dumps_missing", static_cast<int64_t>(report_.dumps_missing)},
      {"anonymous_maps_dropped", static_cast<int64_t>(report_.anonymous_dropped)},
      {"files_added", static_cast<int64_t>(report_.files_added)}};
}

void InjectJit::report_text(std::ostream& out, bool verbose) const {
  uint64_t dumps = 0;
  uint64_t maps = 0;
  uint64_t records = 0;
  for (const auto& src : report_.sources) {
    if (src.found_at.empty()) continue;
    ++(src.kind == JitReport::Source::Kind::kJitdump ? dumps : maps);
    records += src.maps;
  }
  if (report_.sources.empty() && !verbose) return;
  out << "pdfix jit: " << dumps << " jitdump" << (dumps == 1 ? "" : "s") << " and " << maps
      << " perf map file" << (maps == 1 ? "" : "s") << " made into ELF files ("
      << report_.files_added << " new in " << config_.buildid_dir << "); " << records
      << " map records name them";
  if (report_.anonymous_dropped > 0) {
    out << ", " << report_.anonymous_dropped << " anonymous maps of their code dropped";
  }
  out << "\n";
  for (const auto& src : report_.sources) {
    if (src.found_at.empty()) {
      out << "  " << kind_name(src.kind) << " " << format::escape_invalid_utf8(src.name) << " (pid "
          << src.pid
          << "): not used, its JIT code stays unknown: " << format::escape_invalid_utf8(src.problem)
          << "\n";
      continue;
    }
    if (!verbose && src.problem.empty()) continue;
    out << "  " << kind_name(src.kind) << " " << format::escape_invalid_utf8(src.found_at)
        << " (pid " << src.pid << "): " << src.functions << " functions, " << src.maps << " maps, "
        << src.build_id;
    if (!src.problem.empty()) out << "; " << format::escape_invalid_utf8(src.problem);
    out << "\n";
  }
  if (!verbose) return;
  for (const auto& m : report_.map_files_not_found) {
    out << "  no map file of process " << m.pid << " (anonymous code, stays unknown); looked at:";
    for (const std::string& path : m.looked_at) out << " " << format::escape_invalid_utf8(path);
    if (!m.files_on.empty()) out << "; its files: " << format::escape_invalid_utf8(m.files_on);
    out << "\n";
  }
}

}  // namespace pdfix::passes
