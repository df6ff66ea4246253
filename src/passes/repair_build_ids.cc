#include "passes/repair_build_ids.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"

namespace pdfix::passes {
namespace {

bool kernel_side(const transform::Map& m) {
  return m.kind == format::MapKind::kKernel || m.kind == format::MapKind::kModule;
}

}  // namespace

RepairBuildIds::RepairBuildIds(const Common& common)
    : common_(common), resolver_(common.resolver), held_(common.look_ahead_bytes) {}

bool RepairBuildIds::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2;
}

std::optional<std::string> RepairBuildIds::table_says_otherwise(const transform::Map& m,
                                                                const transform::Session& s) const {
  const std::string_view name = m.fields.filename;
  std::set<std::string> ids;
  for (const format::BuildIdEntry& e : s.build_id_table().entries) {
    const bool same_file =
        m.kind == format::MapKind::kKernel
            ? format::is_kernel_tag(e.filename) &&
                  format::machine_of(e.misc, static_cast<uint32_t>(e.pid)) == m.machine
            : e.filename == name;
    if (!same_file) continue;
    if (auto id = e.build_id()) ids.insert(id->hex());
  }
  if (ids.empty() || ids.contains(m.build_id->hex())) return std::nullopt;
  return "the build-id table gives it another id";
}

absl::Status RepairBuildIds::judge(const transform::RecordRef& r, const std::string& why,
                                   const transform::Session& s, transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  const std::string filename(m.fields.filename);
  // What the evidence says of the file, the record's own id aside.
  const resolve::MapQuery query{filename, m.fields.misc, false,       0, 0,
                                0,        m.fields.len,  m.fields.pid};
  const resolve::Resolution& res = resolver_->resolve(query, recording_facts(s, common_));
  if (res.id && *res.id == *m.build_id) return out.emit(r);
  if (res.id) {
    report_.maps.push_back(
        {filename, IdRepair::kRepaired, m.build_id->hex(), res.id->hex(), why + "; " + res.source});
    return out.emit(rebuilt_.map_with_build_id(r, *res.id, s));
  }
  report_.maps.push_back(
      {filename, IdRepair::kRemoved, m.build_id->hex(), "", why + "; nothing proves another"});
  return out.emit(rebuilt_.map_without_build_id(r, s));
}

absl::Status RepairBuildIds::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                     transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  if (m.build_id) ++report_.maps_with_ids;
  if (kernel_side(m)) {
    if (!held_.hold(transform::OwnedRecord(r), r.bytes.size())) return absl::OkStatus();
    held_.flushed_early();
    report_.early_flushes = held_.early_flushes();
    return release(s, out);
  }
  if (auto st = release(s, out); !st.ok()) return st;
  if (!m.build_id) return out.emit(r);
  if (!format::may_carry_build_id(m.kind)) {
    report_.maps.push_back({std::string(m.fields.filename), IdRepair::kRemoved, m.build_id->hex(),
                            "", "memory with no file has no build-id"});
    return out.emit(rebuilt_.map_without_build_id(r, s));
  }
  if (const auto why = table_says_otherwise(m, s)) return judge(r, *why, s, out);
  return out.emit(r);
}

absl::Status RepairBuildIds::release(const transform::Session& s, transform::RecordSink& out) {
  if (held_.empty()) return absl::OkStatus();
  std::vector<transform::OwnedRecord> held = held_.take_all();
  // Which files of a machine carry each id: one id on two files is wrong for one of them at least.
  std::map<std::pair<uint64_t, std::string>, std::set<std::string>> files;
  for (const auto& h : held) {
    const transform::Map& m = *h.map();
    if (m.build_id) {
      files[{m.machine, m.build_id->hex()}].insert(format::module_name(m.fields.filename));
    }
  }
  for (const auto& h : held) {
    const transform::RecordRef r = h.view();
    const transform::Map& m = *r.map;
    std::optional<std::string> why;
    if (m.build_id) {
      const auto& sharing = files[{m.machine, m.build_id->hex()}];
      why = sharing.size() > 1
                ? absl::StrCat("maps of ", sharing.size(), " different files carry this id")
                : table_says_otherwise(m, s);
    }
    auto st = why ? judge(r, *why, s, out) : out.emit(r);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string_view name(IdRepair r) {
  switch (r) {
    case IdRepair::kRepaired:
      return "repaired";
    case IdRepair::kRemoved:
      return "removed";
  }
  return "";
}

llvm::json::Object RepairBuildIds::report_json() const {
  llvm::json::Array maps;
  for (const auto& m : report_.maps) {
    maps.push_back(llvm::json::Object{{"filename", format::escape_invalid_utf8(m.filename)},
                                      {"outcome", std::string(passes::name(m.outcome))},
                                      {"was", m.was},
                                      {"now", m.now},
                                      {"why", format::escape_invalid_utf8(m.why)}});
  }
  return llvm::json::Object{{"maps_with_ids", static_cast<int64_t>(report_.maps_with_ids)},
                            {"early_flushes", static_cast<int64_t>(report_.early_flushes)},
                            {"maps", std::move(maps)}};
}

void RepairBuildIds::report_text(std::ostream& out, bool /*verbose*/) const {
  if (report_.maps.empty()) {
    out << "pdfix repair-build-ids: no wrong id among " << report_.maps_with_ids
        << " map records that carry one\n"
        << transform::early_flush_note(report_.early_flushes);
    return;
  }
  out << "pdfix repair-build-ids: " << report_.maps.size() << " wrong ids among "
      << report_.maps_with_ids << " map records that carry one\n"
      << transform::early_flush_note(report_.early_flushes);
  for (const auto& m : report_.maps) {
    out << "  " << passes::name(m.outcome) << ": " << m.filename << " " << m.was;
    if (!m.now.empty()) out << " -> " << m.now;
    out << " (" << m.why << ")\n";
  }
}

namespace {

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "repair-build-ids"; }
  std::string report_key() const override { return "repair_build_ids"; }
  std::string summary() const override {
    return "replace or remove build-ids that map records carry wrongly";
  }
  std::string description() const override {
    return R"(perf 6.17 made build-ids in map records the default, and until the fix in 7.0 (backported to
6.18.y) every kernel-module MMAP2 after the first carried the first module's build-id: perf
report then shows [unknown] for every module but one. This verb finds ids that cannot be right:
one id on the maps of two different files (kernel and modules), an id the build-id table
contradicts, or any id on a map of memory with no file (anonymous, [heap], [stack], memfd,
SysV), which is removed. Each of the others is replaced by the id the evidence proves, by the same trust rules as inject
(the table, the module file under --sysroot, the running kernel's notes for a recording of this
very boot), or removed, leaving an MMAP2 without build-id, when nothing proves one. A wrong
build-id is worse than none: a suspect id is never left.)";
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    return std::make_unique<RepairBuildIds>(common);
  }
};

}  // namespace

std::unique_ptr<RepairKind> repair_build_ids_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
