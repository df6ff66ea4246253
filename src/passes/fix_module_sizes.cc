#include "passes/fix_module_sizes.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "format/feature.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/records.h"
#include "resolve/elf_build_id.h"
#include "resolve/module_area.h"
#include "resolve/module_layout.h"
#include "resolve/resolver.h"

namespace pdfix::passes {
namespace {

// No kernel gives one module this much memory: x86_64's whole module area is 1.5 GiB.
constexpr uint64_t kAbsurdLen = uint64_t{2} << 30;
// Bounds the look-ahead on a pipe: past this many module maps in a row the run is judged as it
// stands.
constexpr size_t kMaxHeld = 1 << 16;

std::string hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

std::string string_feature(const transform::Session& s, int id) {
  if (auto f = s.feature(id)) {
    if (auto v = format::decode_string_feature(*f); v.ok()) return *v;
  }
  return "";
}

bool is_kernel_mode(uint16_t misc) {
  const uint16_t mode = misc & format::kCpuModeMask;
  return mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel;
}

// The nearest address a module map may not run past, and what is there.
struct Bound {
  uint64_t at = 0;
  std::string what;      // "the kernel image", for "overlaps ..." and "clamped to ..."
  std::string evidence;  // the same as a source of a length: "the kernel image's start"
};

}  // namespace

FixModuleSizes::FixModuleSizes(FixModuleSizesConfig config) : config_(std::move(config)) {}

bool FixModuleSizes::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderBuildId;
}

bool FixModuleSizes::needs_analysis(const transform::Session& s) const {
  return s.compressed_file();
}

void FixModuleSizes::learn_ids(const transform::Session& s) {
  if (ids_learned_) return;
  ids_learned_ = true;
  auto f = s.feature(format::kFeatBuildId);
  if (!f) return;
  auto entries = format::decode_build_id_table(*f);
  if (!entries.ok()) return;
  for (const auto& e : *entries) {
    if (!is_kernel_mode(e.misc)) continue;
    if (auto id = resolve::BuildId::from_bytes({e.id.data(), e.id_size})) {
      known_ids_[resolve::module_name(e.filename)].insert(id->hex());
    }
  }
}

void FixModuleSizes::learn_id_record(const transform::RecordRef& r, const transform::Session& s) {
  auto entries = format::decode_build_id_table({r.bytes, s.endian(), r.offset});
  if (!entries.ok()) return;
  for (const auto& e : *entries) {
    if (!is_kernel_mode(e.misc)) continue;
    if (auto id = resolve::BuildId::from_bytes({e.id.data(), e.id_size})) {
      known_ids_[resolve::module_name(e.filename)].insert(id->hex());
    }
  }
}

absl::StatusOr<std::optional<FixModuleSizes::ModuleMap>> FixModuleSizes::module_map(
    const transform::RecordRef& r, const transform::Session& s) {
  if (r.header.type != format::kMmap && r.header.type != format::kMmap2) return std::nullopt;
  auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  switch (resolve::classify(m->filename, m->misc)) {
    case resolve::MapKind::kKernel:
      // Old perf wrote the kernel map from address 0; pgoff is always the _text address.
      kernel_start_[format::machine_of(m->misc, m->pid)] = m->pgoff != 0 ? m->pgoff : m->start;
      return std::nullopt;
    case resolve::MapKind::kModule: {
      ModuleMap mm{std::string(m->filename), m->misc, m->pid, m->start, m->len, std::nullopt};
      if (m->has_build_id()) {
        mm.build_id = resolve::BuildId::from_bytes({m->build_id.data(), m->build_id_size});
      }
      return mm;
    }
    default:
      return std::nullopt;
  }
}

std::optional<FixModuleSizes::Fix> FixModuleSizes::from_module_file(const ModuleMap& m,
                                                                    const transform::Session& s) {
  if (config_.sysroot.empty() && config_.modules_dir.empty()) return std::nullopt;
  if (!files_) {
    files_.emplace(config_.sysroot, config_.modules_dir, string_feature(s, format::kFeatOsRelease));
  }
  auto path = files_->find(m.filename);
  if (!path) return std::nullopt;
  auto buffer = resolve::read_maybe_compressed(*path);
  if (!buffer.ok()) return std::nullopt;
  const auto& b = **buffer;
  auto layout = resolve::module_layout(
      {reinterpret_cast<const uint8_t*>(b.getBufferStart()), b.getBufferSize()});
  if (!layout.ok() || layout->size == 0) return std::nullopt;
  // A module file of another build is no evidence of this one's size.
  absl::flat_hash_set<std::string> ids;
  if (m.build_id) ids.insert(m.build_id->hex());
  if (auto it = known_ids_.find(resolve::module_name(m.filename)); it != known_ids_.end()) {
    ids.insert(it->second.begin(), it->second.end());
  }
  if (!ids.empty() && (!layout->build_id || !ids.contains(layout->build_id->hex()))) {
    return std::nullopt;
  }
  // perf maps s390 modules from their .text, which lies past the module's base.
  const uint64_t shift =
      string_feature(s, format::kFeatArch).starts_with("s390") ? layout->text_offset : 0;
  if (layout->size <= shift) return std::nullopt;
  return Fix{layout->size - shift, "",
             absl::StrCat("module file ", *path, " (", layout->size, " bytes allocated)")};
}

std::vector<std::optional<FixModuleSizes::Fix>> FixModuleSizes::plan_fixes(
    const std::vector<const ModuleMap*>& maps, const transform::Session& s,
    std::vector<ModuleSizeReport::Unresolved>& unresolved) {
  const std::string arch = string_feature(s, format::kFeatArch);
  std::vector<size_t> order(maps.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const uint64_t ma = format::machine_of(maps[a]->misc, maps[a]->pid);
    const uint64_t mb = format::machine_of(maps[b]->misc, maps[b]->pid);
    if (ma != mb) return ma < mb;
    return maps[a]->start != maps[b]->start ? maps[a]->start < maps[b]->start : a < b;
  });
  std::vector<std::optional<Fix>> fixes(maps.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const ModuleMap& m = *maps[order[k]];
    const uint64_t machine = format::machine_of(m.misc, m.pid);
    // What this module may not run past: the next module, the kernel image, the module area.
    std::optional<Bound> bound;
    auto consider = [&](uint64_t at, std::string what, std::string evidence) {
      if (at > m.start && (!bound || at < bound->at)) {
        bound = Bound{at, std::move(what), std::move(evidence)};
      }
    };
    for (size_t j = k + 1; j < order.size(); ++j) {
      const ModuleMap& n = *maps[order[j]];
      if (format::machine_of(n.misc, n.pid) != machine) break;
      if (n.start > m.start) {
        const std::string next = resolve::module_name(n.filename);
        consider(n.start, "the next module, " + next, "the next module's start (" + next + ")");
        break;
      }
    }
    if (auto it = kernel_start_.find(machine); it != kernel_start_.end()) {
      consider(it->second, "the kernel image", "the kernel image's start");
    }
    std::optional<uint64_t> area = resolve::module_area_end(arch, m.start);
    if (area) {
      const std::string end_of_area = "the end of the " + arch + " module area";
      consider(*area, end_of_area, end_of_area);
    }

    // 2^64 - start, as unsigned arithmetic has it; an end at exactly 2^64 is kept as ~0.
    const uint64_t room = 0 - m.start;
    const bool wraps = m.start != 0 && m.len > room;
    const uint64_t end = m.start != 0 && m.len >= room ? UINT64_MAX : m.start + m.len;
    std::string problem;
    if (wraps) {
      problem = "wraps past 2^64";
    } else if (area && end > *area) {
      problem = "ends past the " + arch + " module area (" + hex(*area) + ")";
    } else if (bound && end > bound->at) {
      problem = "overlaps " + bound->what;
    } else if (m.len >= kAbsurdLen) {
      problem = "is absurdly large";
    }

    std::optional<Fix> fix;
    if (config_.proc_modules) {
      auto it = config_.proc_modules->find(resolve::module_name(m.filename));
      // The listing must place the map inside the module (on s390 the map starts at .text), or
      // it is of another boot.
      if (it != config_.proc_modules->end() && it->second.address <= m.start &&
          m.start < it->second.address + it->second.size) {
        fix = Fix{it->second.address + it->second.size - m.start, problem,
                  absl::StrCat("modules listing: ", it->second.size, " bytes at ",
                               hex(it->second.address))};
      }
    }
    if (!fix && problem.empty()) continue;
    if (!fix) fix = from_module_file(m, s);
    if (!fix && bound) fix = Fix{bound->at - m.start, problem, bound->evidence};
    if (!fix) {
      unresolved.push_back({m.filename, m.start, m.len, problem});
      continue;
    }
    fix->problem = problem;
    if (bound && m.start + fix->new_len > bound->at) {
      fix->new_len = bound->at - m.start;
      absl::StrAppend(&fix->evidence, ", clamped to ", bound->what);
    }
    if (fix->new_len != m.len) fixes[order[k]] = std::move(fix);
  }
  return fixes;
}

absl::Status FixModuleSizes::analyze(const transform::RecordRef& r, const transform::Session& s) {
  analysed_ = true;
  learn_ids(s);
  if (r.header.type == format::kHeaderBuildId) {
    learn_id_record(r, s);
    return absl::OkStatus();
  }
  auto mm = module_map(r, s);
  if (!mm.ok()) return mm.status();
  if (*mm) {
    analysis_run_.push_back(std::move(**mm));
    return absl::OkStatus();
  }
  transform::FeatureEdits none;
  return plan(s, none);
}

absl::Status FixModuleSizes::plan(const transform::Session& s, transform::FeatureEdits& /*edits*/) {
  if (analysis_run_.empty()) return absl::OkStatus();
  std::vector<const ModuleMap*> maps;
  maps.reserve(analysis_run_.size());
  for (const auto& m : analysis_run_) maps.push_back(&m);
  std::vector<ModuleSizeReport::Unresolved> ignored;
  for (const auto& f : plan_fixes(maps, s, ignored)) will_change_ = will_change_ || f.has_value();
  analysis_run_.clear();
  return absl::OkStatus();
}

absl::Status FixModuleSizes::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                     transform::RecordSink& out) {
  learn_ids(s);
  if (r.header.type == format::kHeaderBuildId) learn_id_record(r, s);
  auto mm = module_map(r, s);
  if (!mm.ok()) return mm.status();
  if (!*mm || held_.size() >= kMaxHeld) {
    if (auto st = release(s, out); !st.ok()) return st;
  }
  if (!*mm) return out.emit(r);
  held_.push_back({transform::OwnedRecord(r), std::move(**mm)});
  return absl::OkStatus();
}

absl::Status FixModuleSizes::release(const transform::Session& s, transform::RecordSink& out) {
  if (held_.empty()) return absl::OkStatus();
  std::vector<Held> held = std::move(held_);
  held_.clear();
  std::vector<const ModuleMap*> maps;
  maps.reserve(held.size());
  for (const auto& h : held) maps.push_back(&h.map);
  auto fixes = plan_fixes(maps, s, report_.unresolved);
  report_.module_maps += held.size();
  for (size_t i = 0; i < held.size(); ++i) {
    Held& h = held[i];
    if (fixes[i]) {
      s.endian().put_u64(h.record.bytes().data() + format::MmapRecord::kLenOffset,
                         fixes[i]->new_len);
      h.record.mark_changed();
      report_.changed.push_back({h.map.filename, h.map.start, h.map.len, fixes[i]->new_len,
                                 fixes[i]->problem, fixes[i]->evidence});
    }
    if (auto st = out.emit(h.record.view()); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace pdfix::passes
