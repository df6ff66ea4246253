#include "passes/unwind_stacks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "format/error.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/sample_fields.h"
#include "llvm/Support/JSON.h"
#include "unwind/unwinder.h"

namespace pdfix::passes {
namespace {

// A map's handle on the timeline when nothing mapped there is a binary to unwind in.
constexpr uint32_t kNoBinary = UINT32_MAX;

bool unwinds(const format::EventAttr& a) {
  return (a.sample_type & format::kSampleRegsUser) && (a.sample_type & format::kSampleStackUser);
}

std::string_view stop_name(unwind::Unwound::Stop s) {
  using Stop = unwind::Unwound::Stop;
  switch (s) {
    case Stop::kOutermost:
      return "complete";
    case Stop::kStackEnd:
      return "end of the stack copy";
    case Stop::kNoMap:
      return "pc in no mapped file";
    case Stop::kNoCfi:
      return "no CFI for the pc";
    case Stop::kBadRule:
      return "CFI rule not computable";
    case Stop::kNoProgress:
      return "stack pointer did not move up";
    case Stop::kDepth:
      return "max frames reached";
  }
  return "?";
}

std::string percent(uint64_t n, uint64_t of) {
  return of == 0
             ? "0%"
             : absl::StrFormat("%.1f%%", 100.0 * static_cast<double>(n) / static_cast<double>(of));
}

}  // namespace

// Places a sample's pcs in the binaries its process had mapped, loading each binary's CFI the
// first time a pc falls in it.
class UnwindStacks::Lookup : public unwind::CodeMap {
 public:
  Lookup(UnwindStacks& pass, uint32_t pid) : pass_(pass), pid_(pid) {}
  std::optional<unwind::Code> find(uint64_t pc) override {
    const transform::ProcessTimeline::Map* m = pass_.maps_.find(format::kCpuModeUser, pid_, pc);
    if (m == nullptr || m->file == kNoBinary) return std::nullopt;
    return pass_.binaries_.code_at(m->file, *m, pc, *pass_.regs_);
  }
  uint64_t code_address_mask() const override {
    return unwind::code_address_mask(*pass_.regs_, pass_.user_highest_);
  }

 private:
  UnwindStacks& pass_;
  uint32_t pid_;
};

UnwindStacks::UnwindStacks(UnwindConfig config, const Common& common)
    : config_(std::move(config)),
      common_(common),
      binaries_(config_, common_, report_),
      held_(common.look_ahead_bytes),
      order_([this](uint64_t& seq, std::span<const uint64_t> /*words*/) {
        Held& h = held_[seq - held_first_];
        if (auto st = apply(h, *session_); !st.ok() && delivered_.ok()) delivered_ = st;
        h.ready = true;
      }) {}

UnwindStacks::~UnwindStacks() = default;

void UnwindStacks::map(const transform::RecordRef& r, const transform::Session& s) {
  const transform::Map& m = *r.map;
  const format::MmapRecord& f = m.fields;
  transform::ProcessTimeline::Map placed{.start = f.start,
                                         .end = transform::ProcessTimeline::end_of(f.start, f.len),
                                         .pgoff = f.pgoff,
                                         .file = kNoBinary};
  // Every map goes on the timeline, as every map replaces what it covers; only executable maps of
  // files are binaries to unwind in.
  const bool exec = (format::mmap2_prot_flags(f).prot & format::kProtExec) != 0;
  if ((m.kind == format::MapKind::kFile || m.kind == format::MapKind::kVdso) && exec &&
      !format::is_kernel_mode(f.misc)) {
    placed.file = binaries_.binary_of(m, s);
  }
  if (!format::is_kernel_mode(f.misc) && placed.end > placed.start) {
    user_highest_ = std::max(user_highest_, placed.end - 1);
  }
  maps_.map(f.misc, f.pid, placed,
            m.kind == format::MapKind::kKernel ? s.kernel_start(m.machine) : std::nullopt);
}

absl::Status UnwindStacks::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                   transform::RecordSink& out) {
  session_ = &s;
  const format::Endian& e = s.endian();
  const uint32_t type = r.header.type;
  bool event = type == format::kMmap || type == format::kMmap2 || type == format::kFork ||
               (type == format::kComm && (r.header.misc & format::kMiscCommExec) != 0);
  if (type == format::kSample) {
    const format::EventAttr* attr = s.attr_for(r);
    event = attr != nullptr && unwinds(*attr);
  }
  std::optional<std::vector<uint8_t>> anew;
  if (type == format::kHeaderAttr) {
    const size_t body = r.bytes.size() - format::kRecordHeaderSize;
    if (body >= format::kAttrSizeVer0) {
      auto attr = format::parse_attr(r.bytes.data() + format::kRecordHeaderSize, body, e, r.offset);
      if (attr.ok() && unwinds(*attr)) {
        std::vector<uint8_t> bytes(r.bytes.begin(), r.bytes.end());
        const uint32_t size =
            attr->size == 0 ? format::kAttrSizeVer0 : std::min<uint32_t>(attr->size, body);
        format::set_attr_unwound(bytes.data() + format::kRecordHeaderSize, size, e);
        ++report_.attrs_rewritten;
        anew = std::move(bytes);
      }
    }
  }
  // Nothing waits and nothing will: the record goes on at once, uncopied.
  if (held_.empty() && !event && !transform::ends_round(type)) {
    if (anew) return out.emit(rebuilt_.inserted(*std::move(anew), r, e));
    return out.emit(r);
  }
  const uint64_t seq = next_seq_++;
  if (held_.empty()) held_first_ = seq;
  const bool full = held_.hold({transform::OwnedRecord(r, spare_bytes()), std::move(anew), !event},
                               r.bytes.size());
  if (event) order_.add(transform::record_time(r, s), seq);
  if (transform::ends_round(type)) {
    order_.round();
  } else if (full) {
    // A recording without rounds (or with one this long) would be held whole.
    order_.finish();
    held_.flushed_early();
    report_.early_flushes = held_.early_flushes();
  }
  if (!delivered_.ok()) return delivered_;
  return emit_ready(s, out);
}

absl::Status UnwindStacks::release(const transform::Session& s, transform::RecordSink& out) {
  session_ = &s;
  order_.finish();
  if (!delivered_.ok()) return delivered_;
  return emit_ready(s, out);
}

absl::Status UnwindStacks::emit_ready(const transform::Session& s, transform::RecordSink& out) {
  while (!held_.empty() && held_.front().ready) {
    Held h = held_.take_front();
    ++held_first_;
    const transform::RecordRef r = h.record.view();
    const absl::Status st =
        out.emit(h.anew ? transform::Rebuilt::placed(*h.anew, r, s.endian()) : r);
    if (!st.ok()) return st;
    if (h.anew) give_back(*std::move(h.anew));
    give_back(std::move(h.record).storage());
  }
  return absl::OkStatus();
}

absl::Status UnwindStacks::apply(Held& h, const transform::Session& s) {
  const transform::RecordRef r = h.record.view();
  const format::Endian& e = s.endian();
  switch (r.header.type) {
    case format::kMmap:
    case format::kMmap2:
      map(r, s);
      return absl::OkStatus();
    case format::kFork: {
      auto t = format::decode_task(r.bytes, e, r.offset);
      if (!t.ok()) return t.status();
      maps_.fork(t->pid, t->ppid);
      return absl::OkStatus();
    }
    case format::kComm: {
      auto c = format::decode_comm(r.bytes, e, s.trailer_size(r), r.offset);
      if (!c.ok()) return c.status();
      maps_.exec(c->pid);
      return absl::OkStatus();
    }
    case format::kSample: {
      std::vector<uint8_t> bytes = spare_bytes();
      auto unwound = sample(r, s, bytes);
      if (!unwound.ok()) return unwound.status();
      if (*unwound) {
        h.anew = std::move(bytes);
      } else {
        give_back(std::move(bytes));
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

std::vector<uint8_t> UnwindStacks::spare_bytes() {
  if (spare_.empty()) return {};
  std::vector<uint8_t> bytes = std::move(spare_.back());
  spare_.pop_back();
  return bytes;
}

void UnwindStacks::give_back(std::vector<uint8_t> bytes) {
  if (bytes.capacity() > 0) spare_.push_back(std::move(bytes));
}

absl::StatusOr<bool> UnwindStacks::sample(const transform::RecordRef& r,
                                          const transform::Session& s, std::vector<uint8_t>& anew) {
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr || !unwinds(*attr)) return false;
  const format::Endian& e = s.endian();
  if (!regs_) {
    regs_ = unwind::register_set(s.arch());
    if (!regs_) {
      return absl::UnimplementedError(absl::StrCat(
          "unwind: the recording's architecture is '", s.arch(),
          "'; pdfix unwinds x86_64 and aarch64 stacks (the ARCH header feature says which)"));
    }
  }
  auto fields = format::locate_sample_fields(r.bytes, e, *attr, r.offset);
  if (!fields.ok()) return fields.status();
  const format::UserStack user = format::user_stack(r.bytes, e, *fields);
  ++report_.samples;
  report_.stack_bytes_dropped +=
      fields->stack_user ? fields->stack_user->end - fields->stack_user->at : 0;

  // The kernel's part of the callchain; the user part is unwound anew.
  std::vector<uint64_t>& chain = chain_;
  format::callchain_entries(r.bytes, e, *fields, chain);
  format::keep_kernel_part(chain);
  unwind::Registers regs;
  uint64_t pc = 0;
  const bool taken =
      format::for_each_user_reg(user, attr->sample_regs_user, e, [&](uint32_t bit, uint64_t v) {
        if (bit == regs_->perf_ip) pc = v;
        if (auto dwarf = regs_->dwarf_of_perf(bit); dwarf && *dwarf < unwind::kMaxRegisters) {
          regs.set(*dwarf, v);
        }
      });
  if (!taken) {
    ++report_.kernel_only;
  } else {
    const unwind::StackCopy stack{regs.value[regs_->sp], user.stack, e};
    user_highest_ = std::max(user_highest_, stack.base);
    Lookup lookup(*this, fields->head.pid);
    unwind::Unwound& u = unwound_;
    unwind::unwind(*regs_, regs, pc, stack, lookup, config_.max_frames, u);
    if (u.stop == unwind::Unwound::Stop::kOutermost) {
      ++report_.complete;
    } else {
      ++(u.frames.size() > 1 ? report_.partial : report_.failed);
      const std::string_view why = stop_name(u.stop);
      auto stop = report_.stops.find(why);
      if (stop == report_.stops.end()) stop = report_.stops.emplace(why, 0).first;
      ++stop->second;
      if (u.stop == unwind::Unwound::Stop::kNoCfi) ++report_.lacking_cfi[std::string(u.stopped_in)];
    }
    // A pc in no mapped file is one the maps cannot place: the registers of the image an exec
    // replaced, say. perf shows no user frames for it, and neither does the callchain.
    if (u.frames.size() > 1 || u.stop != unwind::Unwound::Stop::kNoMap) {
      chain.push_back(format::kContextUser);
      chain.insert(chain.end(), u.frames.begin(), u.frames.end());
    }
  }

  if (auto st = format::with_user_callchain(r.bytes, e, *fields, chain, r.offset, anew); !st.ok()) {
    return st;
  }
  return true;
}

absl::Status UnwindStacks::finish(const transform::Session& s, transform::RecordSink& /*out*/,
                                  transform::FeatureEdits& edits) {
  if (s.pipe()) return absl::OkStatus();
  const uint64_t slot = edits.attrs ? edits.attr_size : s.header().attr_size;
  std::vector<uint8_t> attrs;
  if (edits.attrs) {
    attrs = *edits.attrs;
  } else {
    const auto section = s.attrs_section();
    attrs.assign(section.begin(), section.end());
  }
  if (slot <= format::kFileSectionSize) return absl::OkStatus();
  const uint32_t attr_bytes = static_cast<uint32_t>(slot - format::kFileSectionSize);
  bool changed = false;
  for (uint64_t at = 0; at + slot <= attrs.size(); at += slot) {
    auto a =
        format::parse_attr(attrs.data() + at, attr_bytes, s.endian(), s.header().attrs.offset + at);
    if (!a.ok() || !unwinds(*a)) continue;
    const uint32_t size = a->size == 0 ? format::kAttrSizeVer0 : std::min(a->size, attr_bytes);
    format::set_attr_unwound(attrs.data() + at, size, s.endian());
    ++report_.attrs_rewritten;
    changed = true;
  }
  if (changed) {
    edits.attrs = std::move(attrs);
    edits.attr_size = slot;
  }
  return absl::OkStatus();
}

llvm::json::Object UnwindStacks::report_json() const {
  llvm::json::Object lacking, unproven, stops, fetched;
  for (const auto& [name, what] : report_.fetched) fetched[name] = what;
  for (const auto& [name, n] : report_.lacking_cfi) lacking[name] = n;
  for (const auto& [name, why] : report_.unproven) unproven[name] = why;
  for (const auto& [why, n] : report_.stops) stops[why] = n;
  return llvm::json::Object{{"samples", report_.samples},
                            {"complete", report_.complete},
                            {"partial", report_.partial},
                            {"failed", report_.failed},
                            {"kernel_only", report_.kernel_only},
                            {"stack_bytes_dropped", report_.stack_bytes_dropped},
                            {"attrs_rewritten", report_.attrs_rewritten},
                            {"early_flushes", report_.early_flushes},
                            {"stops", std::move(stops)},
                            {"lacking_cfi", std::move(lacking)},
                            {"unproven", std::move(unproven)},
                            {"debuginfod", std::move(fetched)},
                            {"debuginfod_unreachable", report_.unreachable},
                            {"stopped_without_binary", report_.stopped_without_binary()}};
}

void UnwindStacks::report_text(std::ostream& out, bool verbose) const {
  const UnwindReport& r = report_;
  if (r.samples == 0) {
    out << "unwind: no sample carries user registers and stack (record with --call-graph dwarf)\n";
    return;
  }
  const uint64_t user = r.samples - r.kernel_only;
  out << "unwind: " << r.samples << " samples with user stacks: " << r.complete << " complete ("
      << percent(r.complete, user) << "), " << r.partial << " partial (" << percent(r.partial, user)
      << "), " << r.failed << " failed (" << percent(r.failed, user) << ")";
  if (r.kernel_only > 0) out << ", " << r.kernel_only << " without user registers";
  out << "; " << r.stack_bytes_dropped << " bytes of stack copies dropped\n";
  for (const auto& [why, n] : r.stops) out << "  stopped: " << why << ": " << n << " samples\n";
  out << transform::early_flush_note(r.early_flushes);
  for (const auto& [name, n] : r.lacking_cfi) {
    out << "  no CFI: " << name << " (" << n << " samples)\n";
  }
  if (const uint64_t lost = r.stopped_without_binary(); lost > 0) {
    out << "  " << lost << " samples stopped in binaries of which no proven copy was found: "
        << "their callers are lost (give --search, --buildid-dir or --debuginfod)\n";
  }
  if (!r.unreachable.empty()) {
    out << "  debuginfod could not be reached: " << r.unreachable
        << "; the binaries it would have sent stay without CFI\n";
  }
  for (const auto& [name, what] : r.fetched) {
    if (verbose || what.rfind("fetched", 0) != 0) {
      out << "  debuginfod: " << name << ": " << what << "\n";
    }
  }
  for (const auto& [name, why] : r.unproven) {
    if (verbose || r.lacking_cfi.contains(name)) {
      out << "  no proven copy: " << name << ": " << why << "\n";
    }
  }
}

namespace {

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "unwind"; }
  std::string report_key() const override { return "unwind"; }
  std::string summary() const override {
    return "turn DWARF-mode user stacks into callchains, dropping the stack copies";
  }
  std::string description() const override {
    return R"(For every sample that carries the user registers and a copy of the user stack (perf record
--call-graph dwarf), unwinds the user stack with the call frame information (.eh_frame, else
.debug_frame) of the binaries the process had mapped, and writes the frames found into the
sample's callchain after its kernel frames and PERF_CONTEXT_USER, as a frame-pointer callchain
would be. The registers and the stack bytes leave the record, and the events say so:
REGS_USER and STACK_USER are off, sample_regs_user and sample_stack_user are zero, CALLCHAIN is
on. Everything else is kept as it was. perf report and perf script then show the same frames
without unwinding, anywhere, and the recording no longer holds raw process memory.

Run it before the binaries change: their CFI is read from a copy proven to be the mapped file,
by its build-id (the map record's, or one proven as `pdfix inject` proves it), found at the
mapped path (under --sysroot if given), under the process's /proc/PID/root while it lives,
under each --search root, or in perf's build-id cache. With --debuginfod (or $DEBUGINFOD_URLS),
a binary no copy here has is fetched from the servers into the build-id cache and used once its
build-id is checked. A binary without such a copy is named in the summary, and unwinding stops
at it: the frames found up to there are kept. The vdso is
unwound with this machine's when its build-id is the recording's.

A caller's address is its return address less one, as perf's own unwinders report it. x86_64
and aarch64 recordings are unwound.)";
  }
  std::string fix_switch() const override { return "--unwind"; }
  std::string incomplete_exit() const override {
    return "samples stopped in a binary of which no proven copy was found (their callers are "
           "lost; the binaries are named in the summary), or a --debuginfod server could not be "
           "reached.";
  }
  void declare(Options& o) override {
    o.directory("--buildid-dir", "perf's build-id cache (default: $PERF_BUILDID_DIR or ~/.debug).",
                config_.buildid_dir);
    o.value("--debuginfod", "URLS",
            "Fetch a binary that no copy here has from these debuginfod servers (space-separated; "
            "default: $DEBUGINFOD_URLS), into the build-id cache, and use it when its build-id is "
            "the map's.",
            [this](const std::string& v) {
              config_.debuginfod_urls = v;
              return absl::OkStatus();
            });
  }
  void add_to(resolve::ResolverConfig& config) const override {
    if (config.buildid_dir.empty()) config.buildid_dir = config_.buildid_dir;
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    UnwindConfig config = config_;
    if (config.debuginfod_urls.empty()) config.debuginfod_urls = common.host->debuginfod_urls();
    config.debuginfod_client_cache = common.host->debuginfod_client_cache();
    return std::make_unique<UnwindStacks>(std::move(config), common);
  }

 private:
  UnwindConfig config_;
};

}  // namespace

std::unique_ptr<RepairKind> unwind_stacks_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
