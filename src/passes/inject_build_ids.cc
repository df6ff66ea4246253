#include "passes/inject_build_ids.h"

#include "absl/strings/str_cat.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::passes {
namespace {

constexpr int32_t kHostPid = -1;

std::string table_key(std::string_view name, const resolve::BuildId& id) {
  return absl::StrCat(std::string(name), "\n", id.hex());
}

// The name the build-id table uses for a map: the kernel is "[kernel.kallsyms]", not the
// "[kernel.kallsyms]_text" its map record carries.
std::string table_name(const std::string& filename) {
  if (resolve::classify(filename, format::kCpuModeKernel) == resolve::MapKind::kKernel) {
    return filename.substr(0, filename.find(']') + 1);
  }
  return filename;
}

}  // namespace

InjectBuildIds::InjectBuildIds(InjectBuildIdsConfig config)
    : config_(std::move(config)), resolver_(config_.resolver, facts_) {
  facts_.ended_at = config_.recording_ended_at;
}

void InjectBuildIds::learn_strings(const transform::Session& s) {
  for (auto [id, field] : {std::pair{format::kFeatHostname, &facts_.hostname},
                           std::pair{format::kFeatOsRelease, &facts_.osrelease}}) {
    if (auto f = s.feature(id)) {
      if (auto value = format::decode_string_feature(*f); value.ok()) *field = *value;
    }
  }
}

void InjectBuildIds::learn_header(const transform::Session& s) {
  if (header_learned_) return;
  header_learned_ = true;
  learn_strings(s);
  if (auto f = s.feature(format::kFeatBuildId)) {
    if (auto entries = format::decode_build_id_table(*f); entries.ok()) {
      for (const auto& e : *entries) {
        auto id = resolve::BuildId::from_bytes({e.id.data(), e.id_size});
        if (!id) continue;
        const uint16_t mode = e.misc & format::kCpuModeMask;
        facts_.table.push_back(
            {e.filename, *id,
             mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel});
        in_table_.insert(table_key(e.filename, *id));
      }
    }
  }
}

absl::StatusOr<InjectBuildIds::Decision> InjectBuildIds::decide(const transform::RecordRef& r,
                                                                const transform::Session& s) {
  auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  Decision d;
  d.query = {std::string(m->filename),
             m->misc,
             m->is_mmap2 && !m->has_build_id(),
             m->maj,
             m->min,
             m->ino,
             m->len};
  if (m->has_build_id()) return d;
  d.resolution = &resolver_.resolve(d.query);
  return d;
}

bool InjectBuildIds::wants(uint32_t type) const {
  return type == format::kMmap || type == format::kMmap2 || type == format::kHeaderFeature ||
         type == format::kHeaderBuildId;
}

bool InjectBuildIds::needs_analysis(const transform::Session& s) const {
  return s.compressed_file();
}

absl::Status InjectBuildIds::observe(const transform::RecordRef& r, const transform::Session& s) {
  learn_header(s);
  const format::Endian& e = s.endian();
  switch (r.header.type) {
    case format::kHeaderFeature:
      // Pipe mode: the features arrive as records before the data.
      learn_strings(s);
      return absl::OkStatus();
    case format::kHeaderBuildId: {
      // A one-entry table whose entry header is the record's own.
      auto entries = format::decode_build_id_table({r.bytes, e, r.offset});
      if (!entries.ok()) return entries.status();
      for (const auto& entry : *entries) {
        if (auto id = resolve::BuildId::from_bytes({entry.id.data(), entry.id_size})) {
          const uint16_t mode = entry.misc & format::kCpuModeMask;
          facts_.table.push_back(
              {entry.filename, *id,
               mode == format::kCpuModeKernel || mode == format::kCpuModeGuestKernel});
          in_table_.insert(table_key(entry.filename, *id));
        }
      }
      return absl::OkStatus();
    }
    case format::kMmap:
    case format::kMmap2: {
      if (facts_.kernel_text) return absl::OkStatus();
      auto m = format::decode_mmap(r.bytes, e, s.trailer_size(r), r.offset);
      if (!m.ok()) return m.status();
      if (resolve::classify(m->filename, m->misc) == resolve::MapKind::kKernel) {
        facts_.kernel_text = m->pgoff;
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

absl::Status InjectBuildIds::analyze(const transform::RecordRef& r, const transform::Session& s) {
  analysed_ = true;
  if (auto st = observe(r, s); !st.ok()) return st;
  if (r.header.type != format::kMmap && r.header.type != format::kMmap2) return absl::OkStatus();
  auto d = decide(r, s);
  if (!d.ok()) return d.status();
  if (d->resolution != nullptr && d->resolution->id) will_change_ = true;
  return absl::OkStatus();
}

std::vector<uint8_t> InjectBuildIds::table_entry(uint32_t type, const resolve::MapQuery& q,
                                                 const resolve::BuildId& id, uint32_t pid,
                                                 const format::Endian& e) const {
  const uint16_t mode = q.misc & format::kCpuModeMask;
  const bool guest = mode == format::kCpuModeGuestKernel || mode == format::kCpuModeGuestUser;
  return format::encode_build_id_entry(type, mode, guest ? static_cast<int32_t>(pid) : kHostPid,
                                       id.view(), table_name(q.filename), e);
}

void InjectBuildIds::note(const std::string& filename, const std::string& outcome,
                          const std::string& detail, const std::string& id) {
  auto key = std::make_pair(filename, outcome);
  auto it = report_index_.find(key);
  if (it == report_index_.end()) {
    it = report_index_.emplace(key, report_.maps.size()).first;
    report_.maps.push_back({filename, outcome, detail, id, 0});
  }
  ++report_.maps[it->second].records;
}

absl::Status InjectBuildIds::rewrite(const transform::RecordRef& r, const transform::Session& s,
                                     transform::RecordSink& out) {
  if (!analysed_) {
    if (auto st = observe(r, s); !st.ok()) return st;
  }
  if (r.header.type != format::kMmap && r.header.type != format::kMmap2) return out.emit(r);
  auto d = decide(r, s);
  if (!d.ok()) return d.status();
  const Decision& dec = *d;
  if (dec.resolution == nullptr) {
    ++report_.already;
    note(dec.query.filename, "had build-id", "in the record", "");
    return out.emit(r);
  }
  const resolve::Resolution& res = *dec.resolution;
  if (!res.id) {
    ++report_.left;
    if (res.reason != "anonymous") {
      ++report_.left_by_reason[res.reason];
      note(dec.query.filename, "left alone", res.reason, "");
    } else {
      ++report_.left_by_reason["anonymous"];
    }
    return out.emit(r);
  }
  const format::Endian& e = s.endian();
  auto m = format::decode_mmap(r.bytes, e, s.trailer_size(r), r.offset);
  if (!m.ok()) return m.status();
  const std::string key = table_key(table_name(dec.query.filename), *res.id);
  if (!in_table_.contains(key)) {
    in_table_.insert(key);
    ++report_.table_entries_added;
    if (s.pipe()) {
      // A stream has no table: readers learn ids from HEADER_BUILD_ID records before they need
      // them.
      buf_ = table_entry(format::kHeaderBuildId, dec.query, *res.id, m->pid, e);
      transform::RecordRef rec{
          buf_, format::read_record_header(e, buf_.data()), r.offset, 0, r.inner, false};
      if (auto st = out.emit(rec); !st.ok()) return st;
    } else {
      auto entry = table_entry(0, dec.query, *res.id, m->pid, e);
      new_entries_.insert(new_entries_.end(), entry.begin(), entry.end());
    }
  }
  buf_ = format::encode_mmap2_with_build_id(*m, res.id->view(), r.bytes.last(s.trailer_size(r)), e);
  ++report_.upgraded;
  note(dec.query.filename, "upgraded", res.source, res.id->hex());
  transform::RecordRef changed = r;
  changed.bytes = buf_;
  changed.header = format::read_record_header(e, buf_.data());
  changed.original = false;
  return out.emit(changed);
}

absl::Status InjectBuildIds::finish(const transform::Session& s, transform::RecordSink& /*out*/,
                                    transform::FeatureEdits& edits) {
  if (s.pipe() || new_entries_.empty()) return absl::OkStatus();
  std::vector<uint8_t> table;
  if (auto it = edits.replace.find(format::kFeatBuildId); it != edits.replace.end()) {
    table = it->second;
  } else if (auto f = s.feature(format::kFeatBuildId)) {
    table.assign(f->bytes.begin(), f->bytes.end());
  }
  table.insert(table.end(), new_entries_.begin(), new_entries_.end());
  edits.replace[format::kFeatBuildId] = std::move(table);
  return absl::OkStatus();
}

}  // namespace pdfix::passes
