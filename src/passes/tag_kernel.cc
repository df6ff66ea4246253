#include "passes/tag_kernel.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/records.h"
#include "resolve/resolver.h"

namespace pdfix::passes {
namespace {

constexpr int32_t kHostPid = -1;
constexpr uint64_t kHost = format::kHostMachine;

bool kernel_mode(uint16_t misc) {
  const uint16_t mode = misc & format::kCpuModeMask;
  return mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel;
}

uint64_t machine_of(uint16_t misc, int32_t pid) {
  return format::machine_of(misc, static_cast<uint32_t>(pid));
}

bool is_tag(std::string_view name) {
  return name == "[kernel.kallsyms]" || name.starts_with("[guest.kernel.kallsyms");
}

bool looks_like_module_file(std::string_view name) {
  for (std::string_view suffix : {".ko", ".ko.gz", ".ko.xz", ".ko.zst"}) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

}  // namespace

bool TagKernel::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderBuildId;
}

bool TagKernel::needs_analysis(const transform::Session& s) const { return s.compressed_file(); }

void TagKernel::learn_table(const transform::Session& s) {
  if (table_learned_) return;
  table_learned_ = true;
  auto f = s.feature(format::kFeatBuildId);
  if (!f) return;
  // A table that reads only the 6.12.0 way is rewritten with the sizes right.
  table_from_6_12_0_ = format::decode_build_id_table_6_12_0(*f).has_value();
  auto entries = format::decode_build_id_table(*f);
  if (!entries.ok()) return;
  for (auto& e : *entries) {
    auto id = resolve::BuildId::from_bytes({e.id.data(), e.id_size});
    entries_.push_back({std::move(e), id});
  }
}

absl::Status TagKernel::observe(const transform::RecordRef& r, const transform::Session& s) {
  learn_table(s);
  const format::Endian& e = s.endian();
  if (r.header.type == format::kHeaderBuildId) {
    auto entries = format::decode_build_id_table({r.bytes, e, r.offset});
    if (!entries.ok()) return entries.status();
    for (auto& entry : *entries) {
      auto id = resolve::BuildId::from_bytes({entry.id.data(), entry.id_size});
      entries_.push_back({std::move(entry), id});
    }
    return absl::OkStatus();
  }
  if (r.header.type != format::kMmap && r.header.type != format::kMmap2) return absl::OkStatus();
  auto m = format::decode_mmap(r.bytes, e, s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  const uint64_t machine = machine_of(m->misc, static_cast<int32_t>(m->pid));
  switch (resolve::classify(m->filename, m->misc)) {
    case resolve::MapKind::kKernel:
      kernel_map_seen_[machine] = true;
      if (m->has_build_id()) {
        if (auto id = resolve::BuildId::from_bytes({m->build_id.data(), m->build_id_size})) {
          kernel_map_ids_[machine] = *id;
        }
      }
      break;
    case resolve::MapKind::kModule:
      modules_[machine].insert(std::string(m->filename));
      modules_[machine].insert("module:" + resolve::module_name(m->filename));
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

void TagKernel::decide() {
  std::map<uint64_t, std::vector<size_t>> candidates;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const format::BuildIdEntry& e = entries_[i].entry;
    if (!kernel_mode(e.misc) || !entries_[i].id) continue;
    const uint64_t machine = machine_of(e.misc, e.pid);
    const auto& mods = modules_[machine];
    const bool module =
        !is_tag(e.filename) &&
        (mods.contains(e.filename) || mods.contains("module:" + resolve::module_name(e.filename)) ||
         looks_like_module_file(e.filename));
    if (!module) candidates[machine].push_back(i);
  }
  for (const auto& [machine, list] : candidates) {
    if (choices_.contains(machine)) continue;
    std::optional<size_t> tagged;
    std::set<std::string> ids;
    for (size_t i : list) {
      if (is_tag(entries_[i].entry.filename) && !tagged) tagged = i;
      ids.insert(entries_[i].id->hex());
    }
    auto map_id = kernel_map_ids_.find(machine);
    std::optional<size_t> chosen = tagged;
    if (!chosen && ids.size() == 1) chosen = list.front();
    if (!chosen && map_id != kernel_map_ids_.end()) {
      // The kernel map's own id says which of several it is.
      for (size_t i : list) {
        if (*entries_[i].id == map_id->second) chosen = i;
      }
    }
    if (!chosen) {
      std::vector<std::string> names;
      names.reserve(list.size());
      for (size_t i : list) names.push_back(entries_[i].entry.filename);
      undecided_[machine] =
          absl::StrCat(list.size(), " kernel-mode entries that no module map names, with ",
                       ids.size(), " build-ids: ", absl::StrJoin(names, ", "));
      continue;
    }
    if (map_id != kernel_map_ids_.end() && !(*entries_[*chosen].id == map_id->second)) {
      undecided_[machine] =
          "the kernel map carries another build-id than " + entries_[*chosen].entry.filename + "'s";
      continue;
    }
    undecided_.erase(machine);
    choices_[machine] = {*chosen,
                         is_tag(entries_[*chosen].entry.filename) ? entries_[*chosen].entry.filename
                                                                  : format::kernel_name(machine),
                         tagged.has_value()};
  }
}

std::optional<resolve::BuildId> TagKernel::kernel_id(uint64_t machine) const {
  auto it = choices_.find(machine);
  if (it == choices_.end()) return std::nullopt;
  return entries_[it->second.entry].id;
}

absl::Status TagKernel::analyze(const transform::RecordRef& r, const transform::Session& s) {
  analysed_ = true;
  return observe(r, s);
}

absl::Status TagKernel::plan(const transform::Session& /*s*/, transform::FeatureEdits& /*edits*/) {
  if (!analysed_) return absl::OkStatus();
  decide();
  for (const auto& [machine, seen] : kernel_map_seen_) {
    if (seen && !kernel_map_ids_.contains(machine) && choices_.contains(machine)) {
      will_change_ = true;
    }
  }
  return absl::OkStatus();
}

absl::Status TagKernel::emit_kernel_map(const transform::RecordRef& r, const transform::Session& s,
                                        transform::RecordSink& out) {
  const format::Endian& e = s.endian();
  auto m = format::decode_mmap(r.bytes, e, s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  if (resolve::classify(m->filename, m->misc) != resolve::MapKind::kKernel || m->has_build_id()) {
    return out.emit(r);
  }
  auto id = kernel_id(machine_of(m->misc, static_cast<int32_t>(m->pid)));
  if (!id) return out.emit(r);
  buf_ = format::encode_mmap2_with_build_id(*m, id->view(), r.bytes.last(s.trailer_size(r)), e);
  ++report_.kernel_maps_given_id;
  transform::RecordRef changed = r;
  changed.bytes = buf_;
  changed.header = format::read_record_header(e, buf_.data());
  changed.original = false;
  return out.emit(changed);
}

absl::Status TagKernel::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                transform::RecordSink& out) {
  // Records other passes want come by too.
  const bool map = r.header.type == format::kMmap || r.header.type == format::kMmap2;
  if (analysed_) return map ? emit_kernel_map(r, s, out) : out.emit(r);
  if (auto st = observe(r, s); !st.ok()) return st;
  bool hold = false;
  if (r.header.type == format::kHeaderBuildId) {
    auto header = format::read_record_header(s.endian(), r.bytes.data());
    hold = kernel_mode(header.misc);
  } else if (map) {
    auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
    if (!m.ok()) return m.status();
    const auto kind = resolve::classify(m->filename, m->misc);
    hold =
        kind == resolve::MapKind::kKernel || (kind == resolve::MapKind::kModule && !held_.empty());
  }
  if (hold) {
    held_.emplace_back(r);
    return absl::OkStatus();
  }
  if (auto st = release(s, out); !st.ok()) return st;
  return out.emit(r);
}

absl::Status TagKernel::release(const transform::Session& s, transform::RecordSink& out) {
  if (held_.empty()) return absl::OkStatus();
  std::vector<transform::OwnedRecord> held = std::move(held_);
  held_.clear();
  // Once the kernel map and the modules after it have gone by, the data has named the modules.
  if (!kernel_map_seen_.empty()) decide();
  if (s.pipe()) {
    if (auto st = emit_tag_records(s, out, held.front().view()); !st.ok()) return st;
  }
  for (const transform::OwnedRecord& h : held) {
    const transform::RecordRef r = h.view();
    auto st = r.header.type == format::kHeaderBuildId ? out.emit(r) : emit_kernel_map(r, s, out);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status TagKernel::emit_tag_records(const transform::Session& s, transform::RecordSink& out,
                                         const transform::RecordRef& at) {
  const format::Endian& e = s.endian();
  for (const auto& [machine, choice] : choices_) {
    if (choice.already_tagged || tag_emitted_.contains(machine)) continue;
    tag_emitted_.insert(machine);
    const format::BuildIdEntry& k = entries_[choice.entry].entry;
    buf_ = format::encode_build_id_entry(format::kHeaderBuildId, k.misc & format::kCpuModeMask,
                                         machine == kHost ? kHostPid : k.pid,
                                         entries_[choice.entry].id->view(), choice.tag_name, e);
    ++report_.entries_added;
    transform::RecordRef rec{
        buf_, format::read_record_header(e, buf_.data()), at.offset, 0, at.inner, false};
    if (auto st = out.emit(rec); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::vector<uint8_t> TagKernel::table(const transform::Session& s) const {
  const format::Endian& e = s.endian();
  auto f = s.feature(format::kFeatBuildId);
  auto original = [&](size_t i) {
    const format::BuildIdEntry& b = entries_[i].entry;
    if (table_from_6_12_0_ || !f) {
      return format::encode_build_id_entry(0, b.misc & format::kCpuModeMask, b.pid,
                                           {b.id.data(), b.id_size}, b.filename, e);
    }
    const uint8_t* p = f->bytes.data() + (b.offset - f->offset);
    return std::vector<uint8_t>(p, p + e.u16(p + 6));
  };
  std::vector<uint8_t> out;
  std::set<size_t> moved;
  for (const auto& [machine, choice] : choices_) {
    std::vector<uint8_t> entry;
    if (choice.already_tagged) {
      entry = original(choice.entry);
      moved.insert(choice.entry);
    } else {
      const format::BuildIdEntry& k = entries_[choice.entry].entry;
      entry = format::encode_build_id_entry(0, k.misc & format::kCpuModeMask,
                                            machine == kHost ? kHostPid : k.pid,
                                            entries_[choice.entry].id->view(), choice.tag_name, e);
    }
    out.insert(out.end(), entry.begin(), entry.end());
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (moved.contains(i)) continue;
    auto entry = original(i);
    out.insert(out.end(), entry.begin(), entry.end());
  }
  return out;
}

absl::Status TagKernel::finish(const transform::Session& s, transform::RecordSink& out,
                               transform::FeatureEdits& edits) {
  learn_table(s);
  decide();
  bool change = table_from_6_12_0_;
  for (const auto& [machine, choice] : choices_) {
    const format::BuildIdEntry& k = entries_[choice.entry].entry;
    std::string outcome = "tagged";
    if (choice.already_tagged) {
      // Already named right; it must also come first among its machine's kernel entries.
      outcome = "already tagged";
      for (size_t i = 0; i < choice.entry; ++i) {
        const format::BuildIdEntry& before = entries_[i].entry;
        if (kernel_mode(before.misc) && machine_of(before.misc, before.pid) == machine) {
          outcome = "moved first";
        }
      }
    }
    if (outcome != "already tagged") change = true;
    report_.machines.push_back(
        {format::machine_label(machine), outcome,
         choice.already_tagged ? k.filename : k.filename + " is the kernel image",
         entries_[choice.entry].id->hex()});
    if (!s.pipe() && outcome == "tagged") ++report_.entries_added;
  }
  for (const auto& [machine, why] : undecided_) {
    report_.machines.push_back({format::machine_label(machine), "undecided", why, ""});
  }
  if (s.pipe()) {
    // Entries that came after the last held run: their tag goes at the end of the stream.
    return emit_tag_records(s, out, transform::RecordRef{});
  }
  report_.table_repaired = table_from_6_12_0_;
  if (change) edits.replace[format::kFeatBuildId] = table(s);
  return absl::OkStatus();
}

}  // namespace pdfix::passes
