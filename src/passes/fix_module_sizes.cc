#include "passes/fix_module_sizes.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "format/arch.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"
#include "resolve/module_layout.h"

namespace pdfix::passes {
namespace {

// No kernel gives one module this much memory: x86_64's whole module area is 1.5 GiB.
constexpr uint64_t kAbsurdLen = uint64_t{2} << 30;
std::string hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

// The recording's architecture, or what the kernel map's address tells of it where perf wrote no
// ARCH feature.
const format::ArchFacts* arch_of(const transform::Session& s, const transform::Map& m) {
  if (!s.arch().empty()) return format::arch_named(s.arch());
  const auto kernel = s.kernel_start(m.machine);
  return kernel ? format::arch_by_kernel_layout(*kernel, m.fields.start) : nullptr;
}

// The nearest address a module map may not run past, and what is there.
struct Bound {
  uint64_t at = 0;
  std::string what;      // "the kernel image", for "overlaps ..." and "clamped to ..."
  std::string evidence;  // the same as a source of a length: "the kernel image's start"
};

}  // namespace

FixModuleSizes::FixModuleSizes(FixModuleSizesConfig config, uint64_t look_ahead_bytes)
    : config_(std::move(config)), held_(look_ahead_bytes) {}

bool FixModuleSizes::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderBuildId;
}

std::optional<FixModuleSizes::Fix> FixModuleSizes::from_module_file(const transform::Map& m,
                                                                    const transform::Session& s) {
  if (!files_) files_.emplace(config_.places, config_.modules_dir, s.osrelease());
  // What the recording says the module's build-id is: its map's, its table entries'.
  std::vector<format::BuildId> ids;
  if (m.build_id) ids.push_back(*m.build_id);
  const std::string name = format::module_name(m.fields.filename);
  for (const format::BuildIdEntry& e : s.build_id_table().entries) {
    if (!format::is_kernel_mode(e.misc) || format::module_name(e.filename) != name) continue;
    if (auto id = e.build_id()) ids.push_back(*id);
  }
  auto file = files_->find(m.fields.filename, ids);
  if (!file) return std::nullopt;
  const llvm::MemoryBuffer& b = *file->image;
  auto layout = resolve::module_layout(
      {reinterpret_cast<const uint8_t*>(b.getBufferStart()), b.getBufferSize()});
  if (!layout.ok() || layout->size == 0) return std::nullopt;
  // perf maps s390 modules from their .text, which lies past the module's base.
  const format::ArchFacts* arch = format::arch_named(s.arch());
  const uint64_t shift =
      arch != nullptr && arch->module_maps_start_at_text ? layout->text_offset : 0;
  if (layout->size <= shift) return std::nullopt;
  return Fix{layout->size - shift, "",
             absl::StrCat("module file ", file->path, " (", layout->size, " bytes allocated)")};
}

std::vector<std::optional<FixModuleSizes::Fix>> FixModuleSizes::plan_fixes(
    const std::vector<const transform::Map*>& maps, const transform::Session& s) {
  std::vector<size_t> order(maps.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (maps[a]->machine != maps[b]->machine) return maps[a]->machine < maps[b]->machine;
    const uint64_t sa = maps[a]->fields.start;
    const uint64_t sb = maps[b]->fields.start;
    return sa != sb ? sa < sb : a < b;
  });
  std::vector<std::optional<Fix>> fixes(maps.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const transform::Map& map = *maps[order[k]];
    const format::MmapRecord& m = map.fields;
    const format::ArchFacts* facts = arch_of(s, map);
    const std::string arch(facts != nullptr ? facts->name : "");
    // What this module may not run past: the next module, the kernel image, the module area.
    std::optional<Bound> bound;
    auto consider = [&](uint64_t at, std::string what, std::string evidence) {
      if (at > m.start && (!bound || at < bound->at)) {
        bound = Bound{at, std::move(what), std::move(evidence)};
      }
    };
    for (size_t j = k + 1; j < order.size(); ++j) {
      const transform::Map& n = *maps[order[j]];
      if (n.machine != map.machine) break;
      if (n.fields.start > m.start) {
        const std::string next = format::module_name(n.fields.filename);
        consider(n.fields.start, "the next module, " + next,
                 "the next module's start (" + next + ")");
        break;
      }
    }
    if (auto kernel = s.kernel_start(map.machine)) {
      consider(*kernel, "the kernel image", "the kernel image's start");
    }
    std::optional<uint64_t> area = format::module_area_end(facts, m.start);
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
      problem = absl::StrCat("ends past the ", arch, " module area (", hex(*area), ")");
      // What the recording did not say, the report does.
      if (s.arch().empty()) {
        absl::StrAppend(&problem, " (the kernel map's address tells ", arch, "; no ARCH feature)");
      }
    } else if (bound && end > bound->at) {
      problem = "overlaps " + bound->what;
    } else if (end == UINT64_MAX) {
      // perf before 9ad4652b (6.2) gave the last module the rest of the address space.
      problem = "runs to the top of the address space";
    } else if (m.len >= kAbsurdLen) {
      problem = "is absurdly large";
    }

    std::optional<Fix> fix;
    if (config_.proc_modules) {
      auto it = config_.proc_modules->find(format::module_name(m.filename));
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
    if (!fix) fix = from_module_file(map, s);
    if (!fix && bound) fix = Fix{bound->at - m.start, problem, bound->evidence};
    if (!fix) {
      report_.unresolved.push_back({std::string(m.filename), m.start, m.len, problem});
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

absl::Status FixModuleSizes::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                     transform::RecordSink& out) {
  const bool module = r.map != nullptr && r.map->kind == format::MapKind::kModule;
  if (!module) {
    if (auto st = release(s, out); !st.ok()) return st;
    return out.emit(r);
  }
  if (!held_.hold(transform::OwnedRecord(r), r.bytes.size())) return absl::OkStatus();
  held_.flushed_early();
  report_.early_flushes = held_.early_flushes();
  return release(s, out);
}

absl::Status FixModuleSizes::release(const transform::Session& s, transform::RecordSink& out) {
  if (held_.empty()) return absl::OkStatus();
  std::vector<transform::OwnedRecord> held = held_.take_all();
  std::vector<const transform::Map*> maps;
  maps.reserve(held.size());
  for (const auto& h : held) maps.push_back(h.map());
  auto fixes = plan_fixes(maps, s);
  report_.module_maps += held.size();
  for (size_t i = 0; i < held.size(); ++i) {
    transform::OwnedRecord& h = held[i];
    if (fixes[i]) {
      const format::MmapRecord& m = h.map()->fields;
      report_.changed.push_back({std::string(m.filename), m.start, m.len, fixes[i]->new_len,
                                 fixes[i]->problem, fixes[i]->evidence});
      h.set_len(fixes[i]->new_len, s.endian());
    }
    if (auto st = out.emit(h.view()); !st.ok()) return st;
  }
  return absl::OkStatus();
}

llvm::json::Object FixModuleSizes::report_json() const {
  llvm::json::Array changed;
  for (const auto& c : report_.changed) {
    changed.push_back(llvm::json::Object{{"filename", format::escape_invalid_utf8(c.filename)},
                                         {"start", hex(c.start)},
                                         {"old_len", hex(c.old_len)},
                                         {"new_len", hex(c.new_len)},
                                         {"problem", c.problem},
                                         {"evidence", format::escape_invalid_utf8(c.evidence)}});
  }
  llvm::json::Array unresolved;
  for (const auto& u : report_.unresolved) {
    unresolved.push_back(llvm::json::Object{{"filename", format::escape_invalid_utf8(u.filename)},
                                            {"start", hex(u.start)},
                                            {"len", hex(u.len)},
                                            {"problem", u.problem}});
  }
  return llvm::json::Object{{"module_maps", static_cast<int64_t>(report_.module_maps)},
                            {"early_flushes", static_cast<int64_t>(report_.early_flushes)},
                            {"changed", std::move(changed)},
                            {"unresolved", std::move(unresolved)}};
}

void FixModuleSizes::report_text(std::ostream& out, bool /*verbose*/) const {
  const ModuleSizeReport& r = report_;
  if (r.changed.empty() && r.unresolved.empty()) {
    out << "pdfix fix-module-sizes: nothing to fix (" << r.module_maps << " module maps)\n"
        << transform::early_flush_note(r.early_flushes);
    return;
  }
  out << "pdfix fix-module-sizes: " << r.changed.size() << " of " << r.module_maps
      << " module maps changed, " << r.unresolved.size() << " wrong but left alone\n"
      << transform::early_flush_note(r.early_flushes);
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

namespace {

absl::Status read_listing(const std::string& path, FixModuleSizesConfig& config) {
  std::ifstream f(path);
  if (!f) return absl::NotFoundError("cannot read " + path);
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  auto listing = resolve::parse_proc_modules(text);
  if (!listing.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", listing.status().message()));
  }
  config.proc_modules = *std::move(listing);
  return absl::OkStatus();
}

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "fix-module-sizes"; }
  std::string report_key() const override { return "module_sizes"; }
  std::string summary() const override {
    return "give kernel-module maps the extent the modules really had";
  }
  std::string description() const override {
    return R"(perf before 6.2 (commit 9ad4652b) let the last module's map run to the top of the address
space, and since Linux 6.4 the size in /proc/modules covers all of a module's memory, so a
map can overlap the next module. This verb judges every kernel-module map (kernel or guest
kernel cpumode, the kernel image excepted) and repairs the ones that wrap past 2^64, end past
the architecture's module area (x86_64, i386/i686, arm, s390x; from the ARCH feature),
overlap the next module or the kernel image, or are absurdly large (2 GiB or more).

The new length comes from the best evidence at hand, and the report says which:
  1. --proc-modules: the recording host's /proc/modules. Exact, so it also corrects maps
     that looked sane: each named module ends at address + size (on s390, where maps start
     at .text, len = address + size - start). A listing that does not place the map inside
     the module is of another boot and is not used.
  2. the module's ELF file (.ko, .ko.gz, .ko.xz, .ko.zst), by the map's path under --sysroot,
     by its build-id in perf's build-id cache, or by module name under --modules-dir or the
     sysroot's /lib/modules/<osrelease>; under this host's root and each --search root (by
     path or by name, with --sysroot too) only when the recording names the module's build-id
     and the file carries it: its allocated sections laid out as the kernel loads them. Not
     used if the recording names another build-id for the module.
  3. the next module's start (or the kernel image's), clamped to the module area's end.
Then no module map is left overlapping the next one. Maps judged wrong with no evidence are
left as they were and listed. Only the len field of changed records is written.)";
  }
  void declare(Options& o) override {
    o.value("--proc-modules", "FILE",
            "A copy of /proc/modules from the recording host, at recording time.",
            [this](const std::string& v) { return read_listing(v, config_); });
    o.directory("--modules-dir", "A directory searched recursively for modules by name.",
                config_.modules_dir);
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    FixModuleSizesConfig config = config_;
    config.places = common.resolver->copy_places(common.recording_ended_at);
    return std::make_unique<FixModuleSizes>(std::move(config), common.look_ahead_bytes);
  }

 private:
  FixModuleSizesConfig config_;
};

}  // namespace

std::unique_ptr<RepairKind> fix_module_sizes_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
