#include "passes/tag_kernel.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/records.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"

namespace pdfix::passes {
namespace {

constexpr int32_t kHostPid = -1;

uint64_t machine_of(const format::BuildIdEntry& e) {
  return format::machine_of(e.misc, static_cast<uint32_t>(e.pid));
}

}  // namespace

bool TagKernel::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderBuildId;
}

void TagKernel::observe(const transform::Map& m) {
  if (m.kind == format::MapKind::kKernel) {
    kernel_map_seen_.insert(m.machine);
    if (m.build_id) kernel_map_ids_[m.machine] = *m.build_id;
  } else if (m.kind == format::MapKind::kModule) {
    modules_[m.machine].insert(std::string(m.fields.filename));
    modules_[m.machine].insert("module:" + format::module_name(m.fields.filename));
  }
}

void TagKernel::decide(const transform::Session& s) {
  const auto& entries = s.build_id_table().entries;
  std::map<uint64_t, std::vector<size_t>> candidates;
  for (size_t i = 0; i < entries.size(); ++i) {
    const format::BuildIdEntry& e = entries[i];
    if (!format::is_kernel_mode(e.misc) || !e.build_id()) continue;
    const auto& mods = modules_[machine_of(e)];
    const bool module =
        !format::is_kernel_tag(e.filename) &&
        (mods.contains(e.filename) || mods.contains("module:" + format::module_name(e.filename)) ||
         format::looks_like_module_file(e.filename));
    if (!module) candidates[machine_of(e)].push_back(i);
  }
  for (const auto& [machine, list] : candidates) {
    if (choices_.contains(machine)) continue;
    std::optional<size_t> tagged;
    std::set<std::string> ids;
    for (size_t i : list) {
      if (format::is_kernel_tag(entries[i].filename) && !tagged) tagged = i;
      ids.insert(entries[i].build_id()->hex());
    }
    auto map_id = kernel_map_ids_.find(machine);
    std::optional<size_t> chosen = tagged;
    if (!chosen && ids.size() == 1) chosen = list.front();
    if (!chosen && map_id != kernel_map_ids_.end()) {
      // The kernel map's own id says which of several it is.
      for (size_t i : list) {
        if (*entries[i].build_id() == map_id->second) chosen = i;
      }
    }
    if (!chosen) {
      std::vector<std::string> names;
      names.reserve(list.size());
      for (size_t i : list) names.push_back(entries[i].filename);
      undecided_[machine] =
          absl::StrCat(list.size(), " kernel-mode entries that no module map names, with ",
                       ids.size(), " build-ids: ", absl::StrJoin(names, ", "));
      continue;
    }
    const format::BuildIdEntry& k = entries[*chosen];
    if (map_id != kernel_map_ids_.end() && !(*k.build_id() == map_id->second)) {
      undecided_[machine] = "the kernel map carries another build-id than " + k.filename + "'s";
      continue;
    }
    undecided_.erase(machine);
    const bool is_tag = format::is_kernel_tag(k.filename);
    choices_[machine] = {chosen,
                         *k.build_id(),
                         static_cast<uint16_t>(k.misc & format::kCpuModeMask),
                         machine == format::kHostMachine ? kHostPid : k.pid,
                         is_tag ? k.filename : format::kernel_name(machine),
                         tagged.has_value()};
  }
  // A kernel the table does not list (perf record --buildid-mmap writes no table): the id its
  // map carries is the kernel's.
  for (const auto& [machine, id] : kernel_map_ids_) {
    if (candidates.contains(machine) || choices_.contains(machine)) continue;
    const bool guest = machine != format::kHostMachine;
    choices_[machine] = {std::nullopt,
                         id,
                         guest ? format::kCpuModeGuestKernel : format::kCpuModeKernel,
                         guest ? format::machine_pid(machine) : kHostPid,
                         format::kernel_name(machine),
                         false};
  }
}

absl::Status TagKernel::emit_kernel_map(const transform::RecordRef& r, const transform::Session& s,
                                        transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  auto choice = choices_.find(m.machine);
  if (m.kind != format::MapKind::kKernel || m.build_id || choice == choices_.end()) {
    return out.emit(r);
  }
  ++report_.kernel_maps_given_id;
  return out.emit(rebuilt_.map_with_build_id(r, choice->second.id, s));
}

absl::Status TagKernel::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                transform::RecordSink& out) {
  bool hold = false;
  if (r.map != nullptr) {
    observe(*r.map);
    hold = r.map->kind == format::MapKind::kKernel ||
           (r.map->kind == format::MapKind::kModule && !held_.empty());
  } else if (r.header.type == format::kHeaderBuildId) {
    hold = format::is_kernel_mode(r.header.misc);
  }
  if (hold) {
    if (!held_.hold(transform::OwnedRecord(r), r.bytes.size())) return absl::OkStatus();
    held_.flushed_early();
    report_.early_flushes = held_.early_flushes();
    return release(s, out);
  }
  if (auto st = release(s, out); !st.ok()) return st;
  return out.emit(r);
}

absl::Status TagKernel::release(const transform::Session& s, transform::RecordSink& out) {
  if (held_.empty()) return absl::OkStatus();
  std::vector<transform::OwnedRecord> held = held_.take_all();
  // Once the kernel map and the modules after it have gone by, the data has named the modules.
  if (!kernel_map_seen_.empty()) decide(s);
  if (s.pipe()) {
    if (auto st = emit_tag_records(s, out, held.front().view()); !st.ok()) return st;
  }
  for (const transform::OwnedRecord& h : held) {
    const transform::RecordRef r = h.view();
    auto st = r.map == nullptr ? out.emit(r) : emit_kernel_map(r, s, out);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status TagKernel::emit_tag_records(const transform::Session& s, transform::RecordSink& out,
                                         const transform::RecordRef& at) {
  for (const auto& [machine, choice] : choices_) {
    if (choice.already_tagged || tag_emitted_.contains(machine)) continue;
    tag_emitted_.insert(machine);
    ++report_.entries_added;
    auto st = out.emit(rebuilt_.inserted(
        format::encode_build_id_entry(format::kHeaderBuildId, choice.mode, choice.pid,
                                      choice.id.view(), choice.tag_name, s.endian()),
        at, s.endian()));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

std::vector<uint8_t> TagKernel::table(const transform::Session& s) const {
  const format::Endian& e = s.endian();
  const auto& entries = s.build_id_table().entries;
  auto f = s.feature(format::kFeatBuildId);
  auto original = [&](size_t i) {
    const format::BuildIdEntry& b = entries[i];
    // The feature's bytes of an entry, unless perf 6.12.0 wrote their sizes wrong.
    if (!s.build_id_table().sizes_from_6_12_0 && f) {
      if (const auto bytes = format::build_id_entry_bytes(*f, b); !bytes.empty()) {
        return std::vector<uint8_t>(bytes.begin(), bytes.end());
      }
    }
    return format::encode_build_id_entry(0, b.misc & format::kCpuModeMask, b.pid,
                                         {b.id.data(), b.id_size}, b.filename, e);
  };

  std::vector<uint8_t> out;
  std::set<size_t> moved;
  for (const auto& [machine, choice] : choices_) {
    std::vector<uint8_t> entry;
    if (choice.already_tagged) {
      entry = original(*choice.entry);
      moved.insert(*choice.entry);
    } else {
      entry = format::encode_build_id_entry(0, choice.mode, choice.pid, choice.id.view(),
                                            choice.tag_name, e);
    }
    out.insert(out.end(), entry.begin(), entry.end());
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (moved.contains(i)) continue;
    auto entry = original(i);
    out.insert(out.end(), entry.begin(), entry.end());
  }
  return out;
}

std::string_view name(KernelOutcome o) {
  switch (o) {
    case KernelOutcome::kTagged:
      return "tagged";
    case KernelOutcome::kMovedFirst:
      return "moved first";
    case KernelOutcome::kAlreadyTagged:
      return "already tagged";
    case KernelOutcome::kUndecided:
      return "undecided";
  }
  return "";
}

absl::Status TagKernel::finish(const transform::Session& s, transform::RecordSink& out,
                               transform::FeatureEdits& edits) {
  decide(s);
  const auto& entries = s.build_id_table().entries;
  bool change = s.build_id_table().sizes_from_6_12_0;
  for (const auto& [machine, choice] : choices_) {
    KernelOutcome outcome = KernelOutcome::kTagged;
    std::string detail = "the kernel map's own build-id; the table had no kernel entry";
    if (choice.entry) {
      const format::BuildIdEntry& k = entries[*choice.entry];
      detail = choice.already_tagged ? k.filename : k.filename + " is the kernel image";
    }
    if (choice.already_tagged) {
      // Already named right; it must also come first among its machine's kernel entries.
      outcome = KernelOutcome::kAlreadyTagged;
      for (size_t i = 0; i < *choice.entry; ++i) {
        if (format::is_kernel_mode(entries[i].misc) && machine_of(entries[i]) == machine) {
          outcome = KernelOutcome::kMovedFirst;
        }
      }
    }
    if (outcome != KernelOutcome::kAlreadyTagged) change = true;
    report_.machines.push_back(
        {format::machine_label(machine), outcome, std::move(detail), choice.id.hex()});
    if (!s.pipe() && outcome == KernelOutcome::kTagged) ++report_.entries_added;
  }
  for (const auto& [machine, why] : undecided_) {
    report_.machines.push_back(
        {format::machine_label(machine), KernelOutcome::kUndecided, why, ""});
  }
  if (s.pipe()) {
    // Entries that came after the last held run: their tag goes at the end of the stream.
    return emit_tag_records(s, out, transform::RecordRef{});
  }
  report_.table_repaired = s.build_id_table().sizes_from_6_12_0;
  if (change) edits.replace[format::kFeatBuildId] = table(s);
  return absl::OkStatus();
}

llvm::json::Object TagKernel::report_json() const {
  llvm::json::Array machines;
  for (const auto& m : report_.machines) {
    llvm::json::Object o{{"machine", m.machine},
                         {"outcome", std::string(passes::name(m.outcome))},
                         {"detail", format::escape_invalid_utf8(m.detail)}};
    if (!m.build_id.empty()) o["build_id"] = m.build_id;
    machines.push_back(std::move(o));
  }
  return llvm::json::Object{
      {"machines", std::move(machines)},
      {"table_repaired", report_.table_repaired},
      {"entries_added", static_cast<int64_t>(report_.entries_added)},
      {"kernel_maps_given_id", static_cast<int64_t>(report_.kernel_maps_given_id)},
      {"early_flushes", static_cast<int64_t>(report_.early_flushes)}};
}

void TagKernel::report_text(std::ostream& out, bool /*verbose*/) const {
  const TagKernelReport& r = report_;
  if (r.machines.empty()) {
    out << "pdfix tag-kernel: the build-id table has no kernel entry; nothing to tag\n";
  }
  for (const auto& m : r.machines) {
    out << "pdfix tag-kernel: " << m.machine << " kernel " << passes::name(m.outcome);
    if (!m.build_id.empty()) out << " " << m.build_id;
    out << " (" << m.detail << ")\n";
  }
  if (r.table_repaired) out << "  build-id table entry sizes repaired (written by perf 6.12.0)\n";
  if (r.entries_added > 0) out << "  " << r.entries_added << " build-id table entries added\n";
  if (r.kernel_maps_given_id > 0) {
    out << "  " << r.kernel_maps_given_id << " kernel map record(s) given the kernel's build-id\n";
  }
  out << transform::early_flush_note(r.early_flushes);
}

namespace {

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "tag-kernel"; }
  std::string report_key() const override { return "tag_kernel"; }
  std::string summary() const override {
    return "name the kernel's build-id table entry [kernel.kallsyms], first, keeping the path it "
           "was filed under";
  }
  std::string description() const override {
    return R"(perf report gives the kernel map the build-id of the first kernel-mode table entry that is
not a module, and name-matching readers look for "[kernel.kallsyms]". Old and third-party
recordings file the kernel under a vmlinux path, or put an out-of-tree or compressed module
(.ko.xz, .ko.zst, [name]) first, and the kernel gets the wrong id or loses its symbols.

This verb decides which entry is the kernel from the data: the module maps name the modules,
and the kernel image is the kernel-mode entry that no module map names (the kernel map's own
build-id settles a tie). It then adds a "[kernel.kallsyms]" entry with that id (guests keep
"[guest.kernel.kallsyms]" / "[guest.kernel.kallsyms.<pid>]" and their pid) at the head of the
table, keeping the entry it was filed under, pathname and all. A kernel map record without a
build-id gets this one. When it cannot be decided, nothing changes and the report says why.

A table written by perf 6.12.0, whose entry sizes are wrong, is read as written and written
back right. In pipe mode the tag travels as a HEADER_BUILD_ID record. Either byte order.)";
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    return std::make_unique<TagKernel>(common.look_ahead_bytes);
  }
};

}  // namespace

std::unique_ptr<RepairKind> tag_kernel_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
