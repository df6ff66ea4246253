#include "passes/inject_build_ids.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"

namespace pdfix::passes {
namespace {

constexpr int32_t kHostPid = -1;

uint64_t machine_of(const format::BuildIdEntry& e) {
  return format::machine_of(e.misc, static_cast<uint32_t>(e.pid));
}

}  // namespace

InjectBuildIds::InjectBuildIds(const Common& common)
    : common_(common), resolver_(common.resolver) {}

bool InjectBuildIds::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderBuildId;
}

void InjectBuildIds::know(uint64_t machine, const std::string& name, const format::BuildId& id) {
  in_table_.insert(format::build_id_entry_key(machine, name, id));
  table_ids_[absl::StrCat(machine, "\n", name)].insert(id.hex());
  file_of_id_.try_emplace(absl::StrCat(machine, "\n", id.hex()), name);
}

void InjectBuildIds::learn_table(const transform::RecordRef& r, const transform::Session& s) {
  const auto& entries = s.build_id_table().entries;
  for (; table_seen_ < entries.size(); ++table_seen_) {
    const format::BuildIdEntry& e = entries[table_seen_];
    if (auto id = e.build_id()) know(machine_of(e), e.filename, *id);
  }
  if (r.header.type == format::kHeaderBuildId && !r.original) {
    // An earlier pass's entry: the session learns only the input's.
    if (auto added = format::decode_build_id_table({r.bytes, s.endian(), r.offset}); added.ok()) {
      for (const auto& e : *added) {
        if (auto id = e.build_id()) know(machine_of(e), e.filename, *id);
      }
    }
  }
}

std::string_view name(MapOutcome o) {
  switch (o) {
    case MapOutcome::kUpgraded:
      return "upgraded";
    case MapOutcome::kHadBuildId:
      return "had build-id";
    case MapOutcome::kLeftAlone:
      return "left alone";
    case MapOutcome::kNotAddedToTable:
      return "not added to the table";
  }
  return "";
}

void InjectBuildIds::note(const std::string& filename, MapOutcome outcome,
                          const std::string& detail, const std::string& id, bool kept_by_path) {
  auto key = std::make_tuple(filename, outcome, detail, id);
  auto it = report_index_.find(key);
  if (it == report_index_.end()) {
    it = report_index_.emplace(key, report_.maps.size()).first;
    report_.maps.push_back({filename, outcome, detail, id, 0, kept_by_path});
  }
  ++report_.maps[it->second].records;
}

absl::Status InjectBuildIds::add_to_table(const transform::RecordRef& r, const format::BuildId& id,
                                          bool from_record, const transform::Session& s,
                                          transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  const std::string name = m.table_name();
  const std::string key = format::build_id_entry_key(m.machine, name, id);
  if (in_table_.contains(key)) return absl::OkStatus();
  if (from_record) {
    // perf 6.17 gave every module map after the first the first module's id: an id the table
    // gives the name otherwise, or another file's, is no evidence for the table.
    auto ids = table_ids_.find(absl::StrCat(m.machine, "\n", name));
    auto file = file_of_id_.find(absl::StrCat(m.machine, "\n", id.hex()));
    if ((ids != table_ids_.end() && !ids->second.contains(id.hex())) ||
        (file != file_of_id_.end() && file->second != name)) {
      ++report_.table_entries_contradicted;
      note(std::string(m.fields.filename), MapOutcome::kNotAddedToTable,
           "its id is another file's, or the table gives it another", id.hex());
      return absl::OkStatus();
    }
  }
  know(m.machine, name, id);
  const uint16_t mode = m.fields.misc & format::kCpuModeMask;
  const int32_t pid =
      format::is_guest_mode(m.fields.misc) ? static_cast<int32_t>(m.fields.pid) : kHostPid;
  if (!s.pipe()) {
    new_entries_.push_back(
        {key, from_record,
         format::encode_build_id_entry(0, mode, pid, id.view(), name, s.endian())});
    return absl::OkStatus();
  }
  ++(from_record ? report_.table_entries_from_records : report_.table_entries_added);
  // A stream has no table: readers learn ids from HEADER_BUILD_ID records before they need them.
  return out.emit(inserted_.inserted(
      format::encode_build_id_entry(format::kHeaderBuildId, mode, pid, id.view(), name, s.endian()),
      r, s.endian()));
}

absl::Status InjectBuildIds::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                     transform::RecordSink& out) {
  learn_table(r, s);
  if (r.map == nullptr) return out.emit(r);
  const transform::Map& m = *r.map;
  const std::string filename(m.fields.filename);
  if (m.build_id && !format::may_carry_build_id(m.kind)) {
    ++report_.ids_without_file_removed;
    return out.emit(rebuilt_.map_without_build_id(r, s));
  }
  if (m.build_id) {
    ++report_.already;
    note(filename, MapOutcome::kHadBuildId, "in the record", "");
    resolver_->vouch(filename, *m.build_id);
    if (auto st = add_to_table(r, *m.build_id, true, s, out); !st.ok()) return st;
    return out.emit(r);
  }
  const resolve::MapQuery query{filename,     m.fields.misc, m.fields.is_mmap2, m.fields.maj,
                                m.fields.min, m.fields.ino,  m.fields.len,      m.fields.pid};
  const resolve::Resolution& res = resolver_->resolve(query, recording_facts(s, common_));
  if (!res.id) {
    ++report_.left;
    ++report_.left_by_reason[res.reason];
    if (res.absence != resolve::Resolution::Absence::kAnonymous) {
      // Kept by path and content: proven the mapped file, which has no build-id of its own.
      const bool by_path =
          res.absence == resolve::Resolution::Absence::kNoBuildIdInFile && !res.file.empty();
      note(filename, MapOutcome::kLeftAlone, res.reason, "", by_path);
    }
    if (m.fields.build_id_bit_leaked) {
      ++report_.leaked_bits_cleared;
      return out.emit(rebuilt_.map_without_leaked_bit(r, s));
    }
    return out.emit(r);
  }
  report_.leaked_bits_cleared += m.fields.build_id_bit_leaked ? 1 : 0;
  if (auto st = add_to_table(r, *res.id, false, s, out); !st.ok()) return st;
  ++report_.upgraded;
  ++report_.upgraded_by_source[res.source];
  note(filename, MapOutcome::kUpgraded, res.source, res.id->hex());
  return out.emit(rebuilt_.map_with_build_id(r, *res.id, s));
}

std::vector<uint8_t> InjectBuildIds::without_unproven(std::vector<uint8_t> table,
                                                      format::Endian endian) {
  const std::set<std::pair<std::string, std::string>> unproven = resolver_->unproven_table_ids();
  if (unproven.empty()) return table;
  auto entries = format::decode_build_id_table({table, endian, 0});
  if (!entries.ok()) return table;
  std::vector<uint8_t> kept;
  for (size_t i = 0; i < entries->size(); ++i) {
    const format::BuildIdEntry& e = (*entries)[i];
    const uint64_t end = i + 1 < entries->size() ? (*entries)[i + 1].offset : table.size();
    if (machine_of(e) == format::kHostMachine &&
        unproven.contains({e.filename, format::build_id_hex(e)})) {
      report_.table_entries_removed.push_back(e.filename + " " + format::build_id_hex(e));
      continue;
    }
    kept.insert(kept.end(), table.begin() + static_cast<ptrdiff_t>(e.offset),
                table.begin() + static_cast<ptrdiff_t>(end));
  }
  return kept;
}

absl::Status InjectBuildIds::finish(const transform::Session& s, transform::RecordSink& /*out*/,
                                    transform::FeatureEdits& edits) {
  if (s.pipe()) return absl::OkStatus();
  std::vector<uint8_t> original;
  if (auto it = edits.replace.find(format::kFeatBuildId); it != edits.replace.end()) {
    original = it->second;
  } else if (auto f = s.feature(format::kFeatBuildId)) {
    original.assign(f->bytes.begin(), f->bytes.end());
  }
  // perf's ids for files that no map of theirs was (read at this host's path for a chroot's or a
  // container's file, or for a file replaced during the run) leave the table, so that no reader
  // gives them to the maps.
  std::vector<uint8_t> table = without_unproven(original, s.endian());
  // An earlier pass may have listed an id already (tag-kernel the kernel's, from its map).
  absl::flat_hash_set<std::string> listed;
  if (auto entries = format::decode_build_id_table({table, s.endian(), 0}); entries.ok()) {
    for (const auto& e : *entries) {
      if (auto id = e.build_id()) {
        listed.insert(format::build_id_entry_key(machine_of(e), e.filename, *id));
      }
    }
  }
  for (const NewEntry& n : new_entries_) {
    if (!listed.insert(n.key).second) continue;
    ++(n.from_record ? report_.table_entries_from_records : report_.table_entries_added);
    table.insert(table.end(), n.bytes.begin(), n.bytes.end());
  }
  if (table != original) edits.replace[format::kFeatBuildId] = std::move(table);
  return absl::OkStatus();
}

std::vector<transform::PassFinding> InjectBuildIds::findings() const {
  std::vector<transform::PassFinding> out;
  for (const auto& m : report_.maps) {
    if (m.outcome == MapOutcome::kLeftAlone) {
      out.push_back({.record = "MMAP2",
                     .what = m.detail,
                     .about = m.filename,
                     .kept_by_path = m.kept_by_path});
    }
  }
  return out;
}

llvm::json::Object InjectBuildIds::report_json() const {
  llvm::json::Object reasons;
  for (const auto& [why, n] : report_.left_by_reason) reasons[why] = static_cast<int64_t>(n);
  llvm::json::Object sources;
  for (const auto& [from, n] : report_.upgraded_by_source) sources[from] = static_cast<int64_t>(n);
  llvm::json::Array removed;
  for (const std::string& e : report_.table_entries_removed) removed.push_back(e);
  llvm::json::Array maps;
  for (const auto& m : report_.maps) {
    llvm::json::Object o{{"filename", format::escape_invalid_utf8(m.filename)},
                         {"outcome", std::string(passes::name(m.outcome))},
                         {"detail", format::escape_invalid_utf8(m.detail)},
                         {"records", static_cast<int64_t>(m.records)}};
    if (!m.build_id.empty()) o["build_id"] = m.build_id;
    maps.push_back(std::move(o));
  }
  return llvm::json::Object{
      {"upgraded", static_cast<int64_t>(report_.upgraded)},
      {"had_build_id", static_cast<int64_t>(report_.already)},
      {"left_alone", static_cast<int64_t>(report_.left)},
      {"left_alone_by_reason", std::move(reasons)},
      {"kernel_build_id_bits_cleared", static_cast<int64_t>(report_.leaked_bits_cleared)},
      {"ids_without_file_removed", static_cast<int64_t>(report_.ids_without_file_removed)},
      {"table_entries_added", static_cast<int64_t>(report_.table_entries_added)},
      {"table_entries_from_records", static_cast<int64_t>(report_.table_entries_from_records)},
      {"table_entries_contradicted", static_cast<int64_t>(report_.table_entries_contradicted)},
      {"table_entries_removed", std::move(removed)},
      {"upgraded_by_source", std::move(sources)},
      {"maps", std::move(maps)}};
}

void InjectBuildIds::report_text(std::ostream& out, bool verbose) const {
  const InjectReport& r = report_;
  out << "pdfix inject: " << r.upgraded << " map records upgraded, " << r.already
      << " already had a build-id, " << r.left << " left alone; " << r.table_entries_added
      << " build-id table entries added";
  if (r.table_entries_from_records > 0) {
    out << ", " << r.table_entries_from_records << " more for ids already in the records";
  }
  out << "\n";
  if (r.leaked_bits_cleared > 0) {
    out << "  " << r.leaked_bits_cleared
        << " map records said to carry a build-id held a device and inode (the kernel's mark of "
           "another session's build-id maps): read as such\n";
  }
  if (r.ids_without_file_removed > 0) {
    out << "  " << r.ids_without_file_removed
        << " maps of memory with no file (anonymous, heap, stack, memfd) carried a build-id: "
           "removed\n";
  }
  if (r.table_entries_contradicted > 0) {
    out << "  " << r.table_entries_contradicted
        << " ids in records not added to the table: another file's, or the table gives another\n";
  }
  for (const auto& [from, n] : r.upgraded_by_source) {
    out << "  upgraded, from " << from << ": " << n << "\n";
  }
  for (const std::string& e : r.table_entries_removed) {
    out << "  build-id table entry removed: " << e
        << " (this host's file at that path, which no map of it was)\n";
  }
  for (const auto& [why, n] : r.left_by_reason) out << "  left alone, " << why << ": " << n << "\n";
  for (const auto& m : r.maps) {
    if (!verbose && m.outcome != MapOutcome::kLeftAlone &&
        m.outcome != MapOutcome::kNotAddedToTable) {
      continue;
    }
    out << "  " << passes::name(m.outcome) << ": " << m.filename;
    if (!m.build_id.empty()) out << " " << m.build_id;
    out << " (" << m.detail << ", " << m.records << " record" << (m.records == 1 ? "" : "s")
        << ")\n";
  }
}

namespace {

absl::Status parse_known(const std::string& value, std::map<std::string, format::BuildId>& known) {
  std::string text = value;
  if (value.starts_with("@")) {
    std::ifstream f(value.substr(1));
    if (!f) return absl::NotFoundError("cannot read " + value.substr(1));
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  for (absl::string_view pair : absl::StrSplit(text, absl::ByAnyChar(",\n"), absl::SkipEmpty())) {
    pair = absl::StripAsciiWhitespace(pair);
    if (pair.empty()) continue;
    const auto eq = pair.rfind('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("wants PATH=ID, got '", pair, "'"));
    }
    const absl::string_view hex = pair.substr(eq + 1);
    auto id = format::BuildId::from_hex(std::string_view(hex.data(), hex.size()));
    if (!id) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a build-id (hex, up to 40 digits): '", pair.substr(eq + 1), "'"));
    }
    std::string name(pair.substr(0, eq));
    // A module's [name] as the kernel spells it: "nf-tables.ko" loads as nf_tables.
    if (name.starts_with("[")) std::replace(name.begin(), name.end(), '-', '_');
    known[name] = *id;
  }
  return absl::OkStatus();
}

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "inject"; }
  std::string report_key() const override { return "inject"; }
  std::string required_switch() const override { return "--buildids"; }
  std::string summary() const override {
    return "give every map record the build-id of what was mapped, kernel and modules included";
  }
  std::string description() const override {
    return R"(Rewrites each MMAP and MMAP2 record of a file-backed mapping, the kernel's and its modules'
included, as an MMAP2 that carries the build-id of the mapped file (misc bit MMAP_BUILD_ID,
which perf reads since 5.12). Everything else in the record is kept: cpumode, the data bit,
pid, tid, addresses, offset, file name and the sample_id trailer. Every injected id the
build-id table lacks is added to it, so older readers see it too. Records that already carry
an id, anonymous maps and files that cannot be identified for certain are left as they were,
except that a map of memory with no file (anonymous, [heap], [stack], memfd, SysV) loses an id
its record carries: it has none.

A build-id is taken, in this order of trust, from: --known-build-ids; on the host and boot
that recorded (hostname, kernel release and build-id, KASLR base, start after this boot), a file
that is the mapped inode: this host's file at the path, the map's overlay while mounted (its
merged directory and layers, from /proc/self/mountinfo), the process's root (/proc/PID/root)
while it lives, each --search root; the recording's own build-id table, for a map no inode
proves, only when every other file the recording maps at that path is proven to be another (not
an id perf read from this host's file at the path for a chroot's or a container's map); under
--sysroot, the file there; perf's build-id cache; for the kernel and its modules, the running
kernel's notes, only when the recording is of this very boot. Recorded elsewhere, the table's
ids stay in the table and are not copied into maps that carry an inode. A wrong
build-id is worse than none: in doubt a map is left alone and the summary says why.)";
  }
  void declare(Options& o) override {
    o.value("--known-build-ids", "LIST",
            "PATH=ID pairs, comma-separated, or @FILE with one pair a line. Use "
            "[kernel.kallsyms] for the kernel and [name] for a module.",
            [this](const std::string& v) { return parse_known(v, config_.known); });
    o.directory("--buildid-dir", "perf's build-id cache (default: $PERF_BUILDID_DIR or ~/.debug).",
                config_.buildid_dir);
  }
  void add_to(resolve::ResolverConfig& config) const override {
    config.known.insert(config_.known.begin(), config_.known.end());
    if (config.buildid_dir.empty()) config.buildid_dir = config_.buildid_dir;
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    return std::make_unique<InjectBuildIds>(common);
  }

 private:
  InjectBuildIdsConfig config_;
};

}  // namespace

std::unique_ptr<RepairKind> inject_build_ids_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
