#include "passes/inject_jit.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "format/arch.h"
#include "format/attr.h"
#include "format/map_kind.h"
#include "format/record_type.h"
#include "format/utf8.h"
#include "jit/code_placement.h"
#include "jit/jit_elf.h"
#include "jit/jitdump.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/cache_layout.h"
#include "resolve/file_places.h"
#include "store/cache_store.h"
#include "transform/time_order.h"

namespace pdfix::passes {
namespace {

// Whether every event's times are CLOCK_MONOTONIC's (perf record -k mono), the clock the runtimes
// write into their dumps.
bool monotonic_times(const transform::Session& s) {
  const auto& attrs = s.attrs();
  return !attrs.empty() && std::all_of(attrs.begin(), attrs.end(), [](const format::EventAttr& a) {
    return (a.flags & format::kAttrUseClockid) != 0 && a.clockid == format::kClockMonotonic;
  });
}

std::string dir_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? "" : std::string(path.substr(0, slash));
}

std::string describe(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) absl::StrAppend(&out, out.empty() ? "" : "; ", p);
  return out;
}

}  // namespace

InjectJit::InjectJit(InjectJitConfig config, const Common& common)
    : config_(std::move(config)), common_(common) {}

bool InjectJit::wants(uint32_t type) const {
  // Samples, whose times say where the recording is, only while code maps wait.
  return type == format::kMmap || type == format::kMmap2 || type == format::kComm ||
         type == format::kFork || (type == format::kSample && !code_maps_.empty());
}

std::vector<uint8_t> InjectJit::trailer_of(const transform::RecordRef& r,
                                           const transform::Session& s, uint32_t pid, uint32_t tid,
                                           uint64_t time) const {
  const auto trailer = r.bytes.last(s.trailer_size(r));
  std::vector<uint8_t> out(trailer.begin(), trailer.end());
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr || out.empty()) return out;
  format::encode_trailer(out, s.endian(), attr->sample_type,
                         {.pid = pid, .tid = tid, .time = time});
  return out;
}

absl::Status InjectJit::keep(const std::string& name, const format::BuildId& id,
                             std::span<const uint8_t> bytes, JitReport::Source& source) {
  if (config_.buildid_dir.empty()) {
    return absl::FailedPreconditionError(
        "no build-id cache to put its ELF file in (no HOME or PERF_BUILDID_DIR): give "
        "--buildid-dir");
  }
  auto entry = resolve::cache_entry(name, id, resolve::EntryKind::kElf);
  if (!entry) return absl::InternalError("no build-id cache entry for " + name);
  auto stored = store::store_in_cache(config_.buildid_dir, *entry, bytes);
  if (!stored.ok()) {
    return absl::Status(
        stored.status().code(),
        absl::StrCat("keeping the JIT code of ", source.name, ": ", stored.status().message()));
  }
  if (*stored == store::Stored::kAdded) ++report_.files_added;
  source.build_id = id.hex();
  source.elf = config_.buildid_dir + "/" + entry->file;
  return absl::OkStatus();
}

std::string InjectJit::cache_written() const {
  const bool wrote = std::any_of(report_.sources.begin(), report_.sources.end(),
                                 [](const JitReport::Source& s) { return !s.elf.empty(); });
  return wrote ? config_.buildid_dir : "";
}

absl::Status InjectJit::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                transform::RecordSink& out) {
  if (const std::optional<uint64_t> time = transform::record_time(r, s)) {
    reached_ = std::max(reached_, *time);
  }
  // A directory recording's file is read whole before the next: what waits is written at the end
  // of its own.
  if (r.part != part_) {
    if (auto st = write_code_maps(s, out, true); !st.ok()) return st;
    part_ = r.part;
  }
  if (auto st = write_code_maps(s, out, false); !st.ok()) return st;
  if (r.header.type == format::kSample) return out.emit(r);
  if (r.header.type == format::kComm) return comm(r, s, out);
  if (r.header.type == format::kFork) return fork(r, s, out);
  if (r.map == nullptr || r.map->build_id) return out.emit(r);
  const transform::Map& m = *r.map;
  const bool user_file = m.kind == format::MapKind::kFile && !format::is_kernel_mode(m.fields.misc);
  // A file of the process, which its map file's places follow, under the timeline's rules (a fork
  // runs its parent's files, an exec none). One a process is enough: feeding every map would cost
  // a fifth of fix's time on a recording of many short processes.
  if (user_file && m.fields.is_mmap2 && timeline_.lowest(m.fields.pid) == nullptr) {
    const resolve::Inode inode{m.fields.maj, m.fields.min, m.fields.ino};
    auto [file, added] = file_index_.try_emplace(inode, mapped_files_.size());
    if (added) mapped_files_.push_back(inode);
    timeline_.map(m.fields.misc, m.fields.pid,
                  {.start = m.fields.start,
                   .end = transform::ProcessTimeline::end_of(m.fields.start, m.fields.len),
                   .pgoff = m.fields.pgoff,
                   .file = file->second});
  }
  if (user_file && jit::marker_pid(m.fields)) return marker(r, s, out);
  if (format::is_anonymous_code(m.fields.filename, m.fields.misc)) return anonymous(r, s, out);
  return out.emit(r);
}

absl::Status InjectJit::comm(const transform::RecordRef& r, const transform::Session& s,
                             transform::RecordSink& out) {
  // An exec begins another image (transform/process_timeline.h): the dump describes none of the
  // new image's code, and its anonymous code maps stay.
  if ((r.header.misc & format::kMiscCommExec) != 0) {
    auto c = format::decode_comm(r.bytes, s.endian(), s.trailer_size(r), r.offset);
    if (!c.ok()) return c.status();
    timeline_.exec(c->pid);
  }
  return out.emit(r);
}

absl::Status InjectJit::fork(const transform::RecordRef& r, const transform::Session& s,
                             transform::RecordSink& out) {
  auto t = format::decode_task(r.bytes, s.endian(), r.offset);
  if (!t.ok()) return t.status();
  timeline_.fork(t->pid, t->ppid);
  return out.emit(r);
}

absl::Status InjectJit::marker(const transform::RecordRef& r, const transform::Session& s,
                               transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  const std::string path(m.fields.filename);
  JitReport::Source source{.kind = JitReport::Source::Kind::kJitdump,
                           .name = path,
                           .pid = m.fields.pid,
                           .offset = r.offset,
                           .part = r.part,
                           .record = format::record_type_name(r.header.type)};
  // A runtime that maps its dump again names no new code: the dump's maps are in already.
  if (!dumps_seen_.insert({image_of(m.fields.pid), path}).second &&
      dumped_.contains(image_of(m.fields.pid))) {
    return absl::OkStatus();
  }
  auto leave = [&](std::string why) {
    source.found_at.clear();
    source.problem = std::move(why);
    ++report_.dumps_missing;
    report_.sources.push_back(std::move(source));
    return out.emit(r);
  };
  if (!monotonic_times(s)) {
    return leave(
        "recorded without -k mono: the dump's times cannot be matched with the recording's "
        "(record with perf record -k mono)");
  }
  const std::optional<uint64_t> marker_time = transform::record_time(r, s);
  FoundDump& found =
      dump_of(m.fields.pid,
              {path, m.fields.is_mmap2 && !m.fields.has_build_id(),
               resolve::Inode{m.fields.maj, m.fields.min, m.fields.ino}, marker_time},
              s);
  if (!found.file) return leave(found.problem);
  source.found_at = found.file->path;
  const jit::JitDump* dump = &found.file->dump;
  if (dump->cut_at) {
    source.problem =
        absl::StrCat("cut off at byte ", *dump->cut_at, ": its whole records are kept");
  }
  auto image = jit::dump_image(*dump);
  if (!image.ok()) return image.status();
  const std::string elf_name = absl::StrCat(dir_of(path), "/jitted-", m.fields.pid, ".so");
  if (auto st = keep(elf_name, image->elf.id, image->elf.bytes, source); !st.ok()) {
    return leave(std::string(st.message()));
  }
  source.functions = dump->loads.size();

  const uint32_t pid = m.fields.pid;
  source.maps = place_code_maps(r, s, *dump, *image, elf_name, marker_time);
  dumped_.insert(image_of(pid));
  report_.sources.push_back(std::move(source));
  found.file.reset();
  return write_code_maps(s, out, false);
}

uint64_t InjectJit::place_code_maps(const transform::RecordRef& r, const transform::Session& s,
                                    const jit::JitDump& dump, const jit::DumpImage& image,
                                    const std::string& elf_name,
                                    std::optional<uint64_t> marker_time) {
  const format::MmapRecord& marker = r.map->fields;
  const uint32_t pid = marker.pid;
  transform::RecordRef at = r;
  at.bytes = {};
  at.map = nullptr;
  const std::string& name = elf_names_.emplace_back(elf_name);
  uint64_t maps = 0;
  const bool none_waited = code_maps_.empty();
  for (const jit::Placement& p : jit::place_code(dump, image.offsets)) {
    format::MmapRecord fields{.is_mmap2 = true,
                              .misc = static_cast<uint16_t>(marker.misc & format::kCpuModeMask),
                              .pid = pid,
                              // The dump's tids are those of the runtime's pid namespace.
                              .tid = dump.pid == pid ? p.tid : pid,
                              .start = p.start,
                              .len = p.len,
                              .pgoff = p.pgoff,
                              .prot = format::kProtRead | format::kProtExec,
                              .flags = format::kMapPrivate,
                              .filename = name};
    // Never before the marker: what perf has applied by then, it does not take again.
    const uint64_t time = marker_time ? std::max(p.time, *marker_time) : p.time;
    code_maps_.emplace(time, CodeMap{.fields = fields,
                                     .id = image.elf.id,
                                     .trailer = trailer_of(r, s, pid, fields.tid, time),
                                     .marker = at});
    ++maps;
  }
  if (none_waited && !code_maps_.empty()) ++wants_changes_;
  return maps;
}

absl::Status InjectJit::write_code_maps(const transform::Session& s, transform::RecordSink& out,
                                        bool all) {
  if (code_maps_.empty()) return absl::OkStatus();
  auto it = code_maps_.begin();
  for (; it != code_maps_.end() && (all || it->first <= reached_); ++it) {
    const CodeMap& c = it->second;
    if (auto st = out.emit(rebuilt_.new_map(c.fields, c.id, c.trailer, c.marker, s)); !st.ok()) {
      return st;
    }
  }
  code_maps_.erase(code_maps_.begin(), it);
  if (code_maps_.empty()) ++wants_changes_;
  return absl::OkStatus();
}

absl::Status InjectJit::finish(const transform::Session& s, transform::RecordSink& out,
                               transform::FeatureEdits& /*edits*/) {
  return write_code_maps(s, out, true);
}

InjectJit::FoundDump& InjectJit::dump_of(uint32_t pid, const JitMarker& marker,
                                         const transform::Session& s) {
  auto [it, added] = dumps_.try_emplace(image_of(pid));
  if (!added) return it->second;
  it->second.named_pid = *jit::jitdump_pid(marker.filename);
  std::vector<std::string> problems;
  it->second.file = jit::read_dump(dump_candidates(marker, pid, s, problems),
                                   *jit::jitdump_pid(marker.filename), marker.time, problems);
  if (!it->second.file) {
    it->second.problem =
        problems.empty() ? "not found (give a copy with --jit-dir)" : describe(problems);
  }
  return it->second;
}

bool InjectJit::dumped_ahead(const transform::RecordRef& r, const transform::Session& s) {
  if (common_.survey == nullptr || !monotonic_times(s)) return false;
  const MapSurvey* survey = common_.survey->get();
  if (survey == nullptr) return false;
  const auto& markers = survey->jit_markers();
  auto it = markers.find(r.map->fields.pid);
  const std::optional<uint64_t> time = transform::record_time(r, s);
  if (it == markers.end() || !time || !it->second.time || *time < *it->second.time) return false;
  return dump_of(it->first, it->second, s).file.has_value();
}

const InjectJit::MapImage* InjectJit::map_image(const transform::RecordRef& r,
                                                const transform::Session& s) {
  const uint32_t pid = r.map->fields.pid;
  auto [it, added] = map_images_.try_emplace(image_of(pid));
  if (!added) return it->second.get();
  const std::string path = absl::StrCat("/tmp/perf-", pid, ".map");
  auto image = std::make_unique<MapImage>();
  JitReport::MapFileNotFound passed_over{.pid = pid};
  for (const jit::FileCandidate& c : map_candidates(pid, s, passed_over.files_on)) {
    struct stat st{};
    if (stat(c.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      passed_over.looked_at.push_back(c.path);
      continue;
    }
    const int64_t mtime =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (c.recorded && common_.recording_started_at && mtime < *common_.recording_started_at) {
      // Last written before the recording began: an earlier process's.
      passed_over.looked_at.push_back(c.path + " (last written before the recording began)");
      continue;
    }
    std::ifstream f(c.path, std::ios::binary);
    image->text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    size_t skipped = 0;
    image->symbols = jit::parse_perf_map(image->text, skipped);
    if (image->symbols.empty()) {
      passed_over.looked_at.push_back(c.path + " (no symbol in it)");
      continue;
    }
    JitReport::Source source{.kind = JitReport::Source::Kind::kPerfMap,
                             .name = path,
                             .pid = pid,
                             .found_at = c.path,
                             .offset = r.offset,
                             .part = r.part,
                             .record = format::record_type_name(r.header.type)};
    if (skipped > 0) source.problem = absl::StrCat(skipped, " lines that are no symbol skipped");
    // A recording without the ARCH feature is most likely of x86_64.
    const format::ArchFacts* arch = format::arch_named(s.arch());
    auto elf = jit::symbol_image(
        image->symbols, arch != nullptr ? arch->elf_machine : uint16_t{llvm::ELF::EM_X86_64},
        s.endian().is_big());
    if (!elf.ok()) return nullptr;
    image->elf_name = absl::StrCat("/tmp/jitted-", pid, "-perf-map.so");
    image->id = elf->elf.id;
    image->base = elf->base;
    if (auto kept = keep(image->elf_name, elf->elf.id, elf->elf.bytes, source); !kept.ok()) {
      source.found_at.clear();
      source.problem = std::string(kept.message());
      report_.sources.push_back(std::move(source));
      return nullptr;
    }
    source.functions = image->symbols.size();
    std::sort(image->symbols.begin(), image->symbols.end(),
              [](const jit::MapSymbol& a, const jit::MapSymbol& b) { return a.start < b.start; });
    image->source = report_.sources.size();
    report_.sources.push_back(std::move(source));
    it->second = std::move(image);
    return it->second.get();
  }
  report_.map_files_not_found.push_back(std::move(passed_over));
  return nullptr;
}

absl::Status InjectJit::anonymous(const transform::RecordRef& r, const transform::Session& s,
                                  transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  // perf inject --jit does the same: the dump's maps describe the code these held. perf drops
  // those it applies after the marker, by time: one that comes before the marker in the file
  // (another CPU's buffer) is dropped too when the survey shows the marker, and the dump is there.
  if (dumped_.contains(image_of(m.fields.pid)) || dumped_ahead(r, s)) {
    ++report_.anonymous_dropped;
    return absl::OkStatus();
  }
  const MapImage* image = map_image(r, s);
  if (image == nullptr) return out.emit(r);
  auto first =
      std::lower_bound(image->symbols.begin(), image->symbols.end(), m.fields.start,
                       [](const jit::MapSymbol& sym, uint64_t start) { return sym.start < start; });
  if (first == image->symbols.end() || first->start >= m.fields.start + m.fields.len) {
    return out.emit(r);
  }
  format::MmapRecord fields = m.fields;
  fields.filename = image->elf_name;
  fields.pgoff = jit::SymbolImage{.base = image->base}.offset_of(m.fields.start);
  if (!fields.is_mmap2) {
    fields.prot = format::kProtRead | format::kProtExec;
    fields.flags = format::kMapPrivate;
  }
  fields.is_mmap2 = true;
  ++report_.sources[image->source].maps;
  return out.emit(rebuilt_.new_map(fields, image->id, r.bytes.last(s.trailer_size(r)), r, s));
}

namespace {

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "inject-jit"; }
  std::string report_key() const override { return "jit"; }
  std::string fix_skip_switch() const override { return "--no-jit"; }
  std::string summary() const override {
    return "turn jitdumps and perf-PID.map files into ELF files with build-ids the maps name";
  }
  std::string incomplete_exit() const override {
    return "a jitdump the recording names could not be read (missing, another run's, or recorded "
           "without -k mono): its code stays unknown.";
  }
  std::string description() const override {
    return R"(JIT runtimes describe their code in files that live only as long as the process, or until
the next boot: a jitdump (jit-PID.dump, written by node --perf-prof, the JVM's perf agent and
others, and mapped by the runtime so that the recording names it) and /tmp/perf-PID.map (node
--perf-basic-prof, the JVM's -XX:+DumpPerfMapAtExit). This pass makes each into one ELF file with
a build-id computed from its contents, stored in perf's build-id cache (--buildid-dir), where
perf report, archive and store find it:

  jitdump: every function the dump loads is placed in one file (perf inject --jit writes one
  per function). Each load and move becomes an MMAP2 of that file at the load's time,
  carrying its build-id; the marker map and the process's anonymous code maps after it are
  dropped, until the process execs. The recording must have been made with perf record -k mono, the clock the dumps use.
  A dump cut off mid-record keeps its whole records.

  perf-PID.map: a symbol-only ELF file; each anonymous code map of the process that symbols
  fall in becomes an MMAP2 of it carrying its build-id.

On the recording's host a dump is read where its map's file is proven: at the path the
recording names, on the map's overlay while mounted and in its layers, under the recorded
process's root while it lives, under each --search root; each must be the inode mapped (device
and inode). Under --sysroot, under --search roots off that host and in each --jit-dir a dump is
a copy: taken when it is the named process's and loaded no code before its map. A map file is read
only for a recording of this host, and only when written since the recording began, at the
places of the process's own files: this host's /tmp, /tmp of its container's overlay while
mounted (after the process exited too) and of the overlay's layers, under the living process's
root, under each --search root; and in each --jit-dir. In the process's root it is named by the
pid the process had in its own namespace: known while it lives, or from its jitdump's name; else
the host's pid (a container of the host's pid namespace).)";
  }
  void declare(Options& o) override {
    o.each_value("--jit-dir", "DIR",
                 "A directory holding jitdumps and perf-PID.map files copied off the recording "
                 "host; may be given again.",
                 [this](const std::string& v) {
                   struct stat st{};
                   if (stat(v.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
                     return absl::NotFoundError("no such directory: " + v);
                   }
                   config_.jit_dirs.push_back(v);
                   return absl::OkStatus();
                 });
    o.directory("--buildid-dir", "perf's build-id cache (default: $PERF_BUILDID_DIR or ~/.debug).",
                config_.buildid_dir);
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    InjectJitConfig config = config_;
    if (config.buildid_dir.empty()) config.buildid_dir = common.host->buildid_cache_path();
    return std::make_unique<InjectJit>(std::move(config), common);
  }

 private:
  InjectJitConfig config_;
};

}  // namespace

std::unique_ptr<RepairKind> inject_jit_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
