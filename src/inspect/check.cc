#include "inspect/check.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "format/feature.h"
#include "format/map_kind.h"
#include "format/perf_version.h"
#include "format/record_type.h"
#include "inspect/dso_hits.h"
#include "inspect/table_diff.h"
#include "transform/agreement.h"
#include "transform/pipeline.h"

namespace pdfix::inspect {
namespace {

using format::BuildIdEntry;
using Severity = Finding::Severity;

// The largest perf_event_attr the machine's perf (6.1) reads; it refuses larger ones.
uint32_t perf61_attr_size() { return format::attr_size_read_by({6, 1}); }

bool known_to_perf_6_1(uint32_t type) {
  return (type >= format::kMmap && type <= format::kAuxOutputHwId) ||
         (type >= format::kHeaderAttr && type <= format::kFinishedInit);
}

std::string range(const transform::Map& m) {
  return absl::StrCat("[0x", absl::Hex(m.fields.start), ", 0x",
                      absl::Hex(m.fields.start + m.fields.len), ")");
}

class Checker : public transform::DryRunObserver {
 public:
  Checker(std::vector<std::string> fixers, const io::Input& in)
      : names_(std::move(fixers)), hits_(/*callchains=*/true) {
    for (size_t i = 0; i < in.parts.size(); ++i) files_.push_back(in.part_name(i));
  }

  void begin(const transform::Session& s) override {
    session_ = &s;
    hits_.add_entries(s.build_id_table().entries);
    if (s.pipe()) return;
    if (auto desc = s.feature(format::kFeatEventDesc)) {
      for (const std::string& d : transform::event_desc_disagreements(s)) {
        disagrees(0, desc->offset, d);
      }
    }
    for (size_t i = 0; i < s.attrs().size(); ++i) {
      attr_size(s.attrs()[i].size, s.header().attrs.offset + i * s.header().attr_size);
    }
    table_offset_ = s.header().data.offset + s.header().data.size;
    for (const auto& f : s.feature_table()) {
      if (f.id == format::kFeatBuildId) table_offset_ = f.section.offset;
    }
  }

  void read(const transform::RecordRef& r) override {
    if (!r.inner) {
      read_to_ = r.offset + r.bytes.size();
      read_part_ = r.part;
    }
    if (session_->pipe() && r.header.type == format::kHeaderAttr) {
      stream_.attr_out(r.bytes, session_->endian());
    }
    if (session_->pipe() && r.header.type == format::kHeaderFeature) {
      for (const std::string& d : stream_.disagreements(r.bytes, session_->endian())) {
        disagrees(r.part, r.offset, d);
      }
    }
    if (r.trailing) {
      add(r.part, {Severity::kError, r.offset, "",
                   absl::StrCat(r.bytes.size(),
                                " bytes after the last record are no record (text appended to the "
                                "stream?); perf stops reading there and reports an error"),
                   ""});
      return;
    }
    const uint32_t type = r.header.type;
    const std::string name = format::record_type_name(type);
    if (session_->pipe() && !r.inner && format::is_compressed_type(type)) {
      note_once("zstd", r.part,
                {Severity::kNote, r.offset, name,
                 "zstd-compressed records in a stream: perf 6.1 cannot read them", ""});
    }
    if (!known_to_perf_6_1(type)) {
      note_once(absl::StrCat("type ", type), r.part,
                {Severity::kNote, r.offset, name,
                 "a record type perf 6.1 and older do not know: they stop reading here", ""});
    }
    // A sample that cannot be decoded only counts for no DSO.
    hits_.add(r, *session_).IgnoreError();
    if (type == format::kHeaderBuildId) {
      auto entries = format::decode_build_id_table({r.bytes, session_->endian(), r.offset});
      if (entries.ok()) hits_.add_entries(*entries);
    }
    if (type == format::kHeaderAttr) {
      const auto stored =
          format::stored_attr_size(r.bytes.subspan(format::kRecordHeaderSize), session_->endian());
      if (stored) attr_size(*stored, r.offset, r.part);
    }
    if (type == format::kMmap || type == format::kMmap2) {
      auto m =
          format::decode_mmap(r.bytes, session_->endian(), session_->trailer_size(r), r.offset);
      if (!m.ok() || m->has_build_id()) return;
      const format::MapKind kind = format::classify(m->filename, m->misc);
      if (format::is_anonymous_code(m->filename, m->misc)) {
        anonymous_code_.emplace(
            key(r), Idless{std::string(m->filename), r.offset, r.part, name, m->misc, m->pid});
      }
      if (kind == format::MapKind::kAnonymous || kind == format::MapKind::kVdso) return;
      idless_.emplace(key(r),
                      Idless{std::string(m->filename), r.offset, r.part, name, m->misc, m->pid});
    }
  }

  void changed(size_t pass, const transform::RecordRef* before,
               const transform::RecordRef* after) override {
    const std::string& by = names_[pass];
    // A pass named what an anonymous code map held (JIT code), or dropped it for maps that do.
    if (before != nullptr && before->map != nullptr &&
        (after == nullptr || after->map == nullptr ||
         after->map->fields.filename != before->map->fields.filename)) {
      anonymous_code_.erase(key(*before));
    }
    if (before != nullptr && after != nullptr) {
      map_changed(*before, *after, by);
    } else if (after != nullptr && after->header.type == format::kHeaderBuildId) {
      auto entries = format::decode_build_id_table({after->bytes, session_->endian(), 0});
      if (!entries.ok()) return;
      for (const BuildIdEntry& e : *entries) {
        inserted_.push_back({e, by, after->offset, after->part});
      }
    } else if (after != nullptr) {
      // A pass may add thousands (a map per JIT function): told once a pass and type, counted.
      note_once(absl::StrCat("adds ", by, " ", after->header.type), after->part,
                {Severity::kNote, after->offset, format::record_type_name(after->header.type),
                 "fix adds a record here", by});
    } else {
      add(before->part,
          {Severity::kError, before->offset, format::record_type_name(before->header.type),
           "fix removes this record", by});
    }
  }

  void feature_replaced(size_t pass, int feature, std::span<const uint8_t> bytes) override {
    if (feature != format::kFeatBuildId) return;
    auto entries = format::decode_build_id_table({bytes, session_->endian(), 0});
    if (entries.ok()) tables_.push_back({names_[pass], *std::move(entries)});
  }

  // A reader that takes the attrs from EVENT_DESC parses the samples with a layout they do not
  // have; every pass of fix writes EVENT_DESC from the attrs.
  void disagrees(uint32_t part, uint64_t offset, const std::string& what) {
    add(part, {Severity::kError, offset, "EVENT_DESC feature",
               absl::StrCat(what, ": readers that take the attrs from EVENT_DESC misread samples"),
               "fix"});
  }

  void end(const absl::Status& reading) override {
    if (!reading.ok()) {
      add(read_part_, {Severity::kError, read_to_, "",
                       absl::StrCat("the recording cannot be read past here (", reading.message(),
                                    "); perf loses what follows"),
                       ""});
    }
    table_findings();
    hits_.finish();
    jit_code_findings();
    sort_findings();
  }

  void pass_finding(size_t pass, const transform::PassFinding& f) {
    if (!f.about.empty()) {
      WhyIdless& why = why_idless_[f.about];
      why.reasons.insert(f.what);
      why.kept_by_path &= f.kept_by_path;
      return;
    }
    add(f.part, {f.repaired ? Severity::kNote : Severity::kError, f.offset, f.record, f.what,
                 f.repaired ? names_[pass] : ""});
    sort_findings();
  }

  // After the passes have said why they leave maps without an id: the files samples hit in maps
  // that carry none.
  void idless_findings() {
    for (const auto& [k, m] : idless_) {
      if (!hits_.was_hit(m.misc, m.pid, m.filename)) continue;
      if (m.fixed_by.empty()) {
        // Two files at one path (a host's and a container's) may be left for two reasons.
        const auto why = why_idless_.find(m.filename);
        const std::set<std::string> reasons =
            why == why_idless_.end() ? std::set<std::string>{} : why->second.reasons;
        // A file proven to be the mapped one that has no build-id of its own is kept by path.
        if (why != why_idless_.end() && why->second.kept_by_path) {
          note_once("idless " + m.filename, m.part,
                    {Severity::kNote, m.offset, m.record,
                     absl::StrCat(m.filename, ": ", absl::StrJoin(reasons, "; "),
                                  "; fix --archive/--store keeps it by path and content, for "
                                  "perf report --symfs (pdfix unpack prints the command)"),
                     ""});
          continue;
        }
        Finding f{Severity::kNote, m.offset, m.record,
                  absl::StrCat(m.filename,
                               ": samples hit maps of it that carry no build-id, and fix proves "
                               "none",
                               reasons.empty() ? "" : ": ", absl::StrJoin(reasons, "; ")),
                  ""};
        f.unrecoverable = true;
        note_once("idless " + m.filename, m.part, std::move(f));
      } else {
        note_once(
            "adds " + m.filename, m.part,
            {Severity::kNote, m.offset, m.record,
             absl::StrCat(m.filename, ": samples hit maps of it that carry no build-id; fix adds ",
                          m.fixed_id),
             m.fixed_by});
      }
    }
    sort_findings();
  }

  CheckReport take() { return std::move(report_); }

  // Anonymous code that samples hit and that no pass named: JIT code whose jitdump or map file is
  // not here. Told once, with the processes.
  void jit_code_findings() {
    std::map<uint32_t, const Idless*> by_pid;
    for (const auto& [k, m] : anonymous_code_) {
      if (hits_.was_hit(m.misc, m.pid, m.filename)) by_pid.try_emplace(m.pid, &m);
    }
    if (by_pid.empty()) return;
    std::string pids;
    for (const auto& [pid, m] : by_pid) absl::StrAppend(&pids, pids.empty() ? "" : ", ", pid);
    const Idless& first = *by_pid.begin()->second;
    add(first.part,
        {Severity::kNote, first.offset, first.record,
         absl::StrCat("samples hit anonymous code (JIT code?) of process",
                      by_pid.size() == 1 ? " " : "es ", pids,
                      " that no jitdump or /tmp/perf-PID.map here names: its functions stay "
                      "unnamed unless the map files are given (fix --jit-dir)"),
         ""});
  }

 private:
  using Key = std::tuple<uint32_t, uint64_t, uint64_t, bool>;
  static Key key(const transform::RecordRef& r) {
    return {r.part, r.offset, r.inner_offset, r.inner};
  }

  // A map without a build-id; `fixed_by` names the pass that gives it `fixed_id`.
  struct Idless {
    std::string filename;
    uint64_t offset = 0;
    uint32_t part = 0;
    std::string record;
    uint16_t misc = 0;
    uint32_t pid = 0;
    std::string fixed_id;
    std::string fixed_by;
  };
  // By file as read (`data`, then data.N in order), then offset, then as found.
  void sort_findings() {
    std::vector<Finding>& f = report_.findings;
    auto file_index = [&](const Finding& x) {
      if (x.file.empty()) return size_t{0};
      return static_cast<size_t>(std::find(files_.begin(), files_.end(), x.file) - files_.begin()) +
             1;
    };
    std::vector<size_t> order(f.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::make_tuple(file_index(f[a]), f[a].offset, a) <
             std::make_tuple(file_index(f[b]), f[b].offset, b);
    });
    std::vector<Finding> sorted;
    sorted.reserve(f.size());
    for (size_t i : order) sorted.push_back(std::move(f[i]));
    f = std::move(sorted);
  }

  // A finding about file `part` of the recording (see RecordRef::part).
  void add(uint32_t part, Finding f) {
    if (part > 0 && part <= files_.size()) f.file = files_[part - 1];
    if (f.severity == Severity::kError && f.fixed_by.empty()) f.unrecoverable = true;
    report_.findings.push_back(std::move(f));
  }
  void note_once(const std::string& kind, uint32_t part, Finding f) {
    auto [it, fresh] = noted_.emplace(kind, report_.findings.size());
    if (fresh) {
      add(part, std::move(f));
    } else {
      ++report_.findings[it->second].count;
    }
  }

  void attr_size(uint32_t size, uint64_t offset, uint32_t part = 0) {
    if (size <= perf61_attr_size()) return;
    note_once(absl::StrCat("attr ", size), part,
              {Severity::kNote, offset, "attr",
               absl::StrCat("a perf_event_attr of ", size,
                            " bytes: perf 6.1 and older refuse "
                            "the file (\"unsupported ABI\")"),
               ""});
  }

  void map_changed(const transform::RecordRef& before, const transform::RecordRef& after,
                   const std::string& by) {
    const transform::Map& b = *before.map;
    const transform::Map& a = *after.map;
    const std::string record = format::record_type_name(before.header.type);
    const std::string file(b.fields.filename);
    if (b.fields.filename != a.fields.filename) {
      note_once(absl::StrCat("renames ", by, " ", file), before.part,
                {Severity::kNote, before.offset, record,
                 absl::StrCat(
                     file, " mapped at ", range(b), ": fix maps ", std::string(a.fields.filename),
                     a.build_id ? " (build-id " + a.build_id->hex() + ")" : "", " there instead"),
                 by});
      return;
    }
    if (b.fields.len != a.fields.len) {
      add(before.part, {Severity::kError, before.offset, record,
                        absl::StrCat(file, " mapped at ", range(b), ": the module is 0x",
                                     absl::Hex(a.fields.len),
                                     " bytes long; perf attributes what follows it to it"),
                        by});
    }
    if (b.build_id && a.build_id && !(*b.build_id == *a.build_id)) {
      add(before.part, {Severity::kError, before.offset, record,
                        absl::StrCat(file, " carries build-id ", b.build_id->hex(),
                                     "; the evidence proves ", a.build_id->hex()),
                        by});
    } else if (b.build_id && !a.build_id) {
      add(before.part,
          {Severity::kError, before.offset, record,
           absl::StrCat(file, " carries build-id ", b.build_id->hex(),
                        ", which is wrong; nothing proves the right one, so fix removes it"),
           by});
    } else if (!b.build_id && a.build_id) {
      if (auto it = idless_.find(key(before)); it != idless_.end()) {
        it->second.fixed_id = a.build_id->hex();
        it->second.fixed_by = by;
      }
    }
  }

  // What the passes add to the build-id table (or reorder in it), against what perf wrote.
  void table_findings() {
    for (TableFinding& f : inspect::table_findings(session_->build_id_table(), table_offset_,
                                                   session_->pipe(), tables_, inserted_)) {
      if (f.once.empty()) {
        add(f.part, std::move(f.finding));
      } else {
        note_once(f.once, f.part, std::move(f.finding));
      }
    }
  }

  std::vector<std::string> names_;
  std::vector<std::string> files_;  // data.N of a directory recording
  const transform::Session* session_ = nullptr;
  transform::StreamAgreement stream_;
  uint64_t read_to_ = 0;
  uint32_t read_part_ = 0;
  uint64_t table_offset_ = 0;
  std::map<Key, Idless> idless_;
  std::map<Key, Idless> anonymous_code_;  // maps of JIT code, until a pass names them
  DsoHits hits_;
  // Why the passes leave a file's maps without an id, and whether every map of it is one kept by
  // path (two files at one path, a host's and a container's, may differ).
  struct WhyIdless {
    std::set<std::string> reasons;
    bool kept_by_path = true;
  };
  std::map<std::string, WhyIdless> why_idless_;
  std::vector<TableInsert> inserted_;
  std::vector<PassTable> tables_;
  std::map<std::string, size_t> noted_;
  CheckReport report_;
};

}  // namespace

absl::StatusOr<CheckReport> check(io::Input& in, transform::PassChain chain,
                                  std::vector<std::string> fixers) {
  fixers.resize(chain.size());
  Checker checker(std::move(fixers), in);
  if (auto s = transform::dry_run(in, chain, checker); !s.ok()) return s;
  for (size_t i = 0; i < chain.size(); ++i) {
    for (const transform::PassFinding& f : chain[i]->findings()) checker.pass_finding(i, f);
  }
  checker.idless_findings();
  return checker.take();
}

}  // namespace pdfix::inspect
