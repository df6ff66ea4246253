#include "passes/compat.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "format/attr.h"
#include "format/error.h"
#include "format/feature.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/records.h"

namespace pdfix::passes {
namespace {

constexpr uint64_t kAttrDeferCallchain = uint64_t{1} << 38;

// The perf_event_attr fields by the offset they start at, for saying which one would be lost.
std::string attr_field_at(uint32_t offset) {
  struct Field {
    uint32_t from;
    const char* name;
  };
  constexpr Field kFields[] = {{136, "config4"},
                               {128, "config3"},
                               {120, "sig_data"},
                               {112, "aux_sample_size"},
                               {104, "aux_watermark/sample_max_stack"},
                               {96, "sample_regs_intr"},
                               {80, "sample_regs_user/sample_stack_user/clockid"},
                               {72, "branch_sample_type"},
                               {64, "config2"}};
  if (offset >= 144) return absl::StrCat("the bytes at offset ", offset);
  for (const Field& f : kFields) {
    if (offset >= f.from) return f.name;
  }
  return absl::StrCat("offset ", offset);
}

std::vector<uint8_t> finished_round(const format::Endian& e) {
  std::vector<uint8_t> r(format::kRecordHeaderSize);
  format::write_record_header(e, r.data(), {format::kFinishedRound, 0, format::kRecordHeaderSize});
  return r;
}

}  // namespace

Compat::Compat(std::optional<format::ReaderProfile> target, uint64_t look_ahead_bytes)
    : target_(target), waiting_(look_ahead_bytes) {
  if (target_) {
    report_.target = target_->version.text();
    report_.attr_size_to = target_->attr_size;
  }
}

std::string Compat::format_type(uint32_t type) { return format::record_type_name(type); }

bool Compat::wants(uint32_t type) const {
  if (!target_) return false;
  const bool stitching = !target_->knows_type(format::kCallchainDeferred);
  return type == format::kHeaderAttr || type == format::kHeaderFeature ||
         ((type == format::kMmap2 || type == format::kHeaderBuildId) && !target_->build_id_mmap2) ||
         (stitching && (type == format::kSample || type == format::kFinishedRound)) ||
         !target_->knows_type(type);
}

std::optional<uint32_t> Compat::compressed_output(const transform::Session& s) const {
  if (!target_) return std::nullopt;
  if (s.pipe()) return target_->compressed_in_pipe ? std::nullopt : std::optional<uint32_t>(0);
  if (target_->compressed2) return std::nullopt;
  return target_->compressed ? uint32_t{format::kCompressed} : 0U;
}

absl::StatusOr<std::vector<uint8_t>> Compat::shrink(std::span<const uint8_t> attr, uint32_t size,
                                                    const format::Endian& e, uint64_t offset) {
  uint32_t stored = format::stored_attr_size(attr, e).value_or(0);
  if (stored == 0) stored = format::kAttrSizeVer0;
  stored = std::min<uint32_t>(stored, static_cast<uint32_t>(attr.size()));
  report_.attr_size_from = std::max(report_.attr_size_from, stored);
  std::vector<uint8_t> out(attr.begin(), attr.end());
  if (stored <= size) {
    out.resize(size, 0);
    return out;
  }
  for (uint32_t i = size; i < stored; ++i) {
    if (attr[i] != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--for ", target_->version.text(), ": the event attr at offset 0x", absl::Hex(offset),
          " sets ", attr_field_at(i), ", which perf ", target_->version.text(),
          " does not read; dropping it would change what the event counts"));
    }
  }
  out.resize(size);
  format::set_stored_attr_size(out, e, size);
  ++report_.attrs_shrunk;
  return out;
}

absl::Status Compat::shrink_attr_record(const transform::RecordRef& r, const transform::Session& s,
                                        transform::RecordSink& out) {
  const format::Endian& e = s.endian();
  const std::span<const uint8_t> body = r.bytes.subspan(format::kRecordHeaderSize);
  if (body.size() < format::kAttrSizeVer0) return out.emit(r);
  uint32_t stored = *format::stored_attr_size(body, e);
  if (stored == 0) stored = format::kAttrSizeVer0;
  if (stored <= target_->attr_size || stored > body.size()) return out.emit(r);
  auto attr =
      shrink(body.first(stored), target_->attr_size, e, r.offset + format::kRecordHeaderSize);
  if (!attr.ok()) return attr.status();
  std::vector<uint8_t> bytes(format::kRecordHeaderSize);
  bytes.insert(bytes.end(), attr->begin(), attr->end());
  bytes.insert(bytes.end(), body.begin() + stored, body.end());  // the ids
  format::write_record_header(
      e, bytes.data(), {format::kHeaderAttr, r.header.misc, static_cast<uint16_t>(bytes.size())});
  return out.emit(rebuilt_.inserted(std::move(bytes), r, e));
}

absl::Status Compat::feature_record(const transform::RecordRef& r, const transform::Session& s,
                                    transform::RecordSink& out) {
  const std::optional<uint64_t> id = format::header_feature_id(r.bytes, s.endian());
  if (!id) return out.emit(r);
  const format::Endian& e = s.endian();
  if (!format::header_feature_payload(r.bytes)) {
    // The end of the stream's features, numbered as the writer's HEADER_LAST_FEATURE; perf report
    // refuses a number past its own.
    if (*id == static_cast<uint64_t>(target_->features_end)) return out.emit(r);
    std::vector<uint8_t> bytes(r.bytes.begin(), r.bytes.end());
    format::set_header_feature_id(bytes, e, static_cast<uint64_t>(target_->features_end));
    return out.emit(rebuilt_.inserted(std::move(bytes), r, e));
  }
  const bool plain = compressed_output(s) == 0U;
  if (*id >= static_cast<uint64_t>(target_->features_end) ||
      (plain && *id == static_cast<uint64_t>(format::kFeatCompressed))) {
    report_.dropped_features.push_back(format::feature_name(static_cast<int>(
        std::min<uint64_t>(*id, static_cast<uint64_t>(std::numeric_limits<int>::max())))));
    return absl::OkStatus();
  }
  return out.emit(r);
}

void Compat::list(const std::vector<format::BuildIdEntry>& entries,
                  std::set<std::string>& into) const {
  for (const auto& entry : entries) {
    if (auto id = entry.build_id()) {
      into.insert(format::build_id_entry_key(
          format::machine_of(entry.misc, static_cast<uint32_t>(entry.pid)), entry.filename, *id));
    }
  }
}

absl::Status Compat::plain_map(const transform::RecordRef& r, const transform::Session& s,
                               transform::RecordSink& out) {
  const transform::Map& m = *r.map;
  const format::Endian& e = s.endian();
  const auto& table = s.build_id_table().entries;
  list({table.begin() + static_cast<ptrdiff_t>(table_seen_), table.end()}, listed_);
  table_seen_ = table.size();
  ++report_.build_id_maps_made_plain;
  const std::string name = m.table_name();
  if (m.kind != format::MapKind::kAnonymous &&
      listed_.insert(format::build_id_entry_key(m.machine, name, *m.build_id)).second) {
    // The id leaves the record: the table keeps it for the reader.
    const uint16_t mode = m.fields.misc & format::kCpuModeMask;
    const int32_t pid =
        format::is_guest_mode(m.fields.misc) ? static_cast<int32_t>(m.fields.pid) : -1;
    if (!s.pipe()) {
      new_entries_.emplace_back(
          format::build_id_entry_key(m.machine, name, *m.build_id),
          format::encode_build_id_entry(0, mode, pid, m.build_id->view(), name, e));
    } else {
      ++report_.table_entries_added;
      auto st = out.emit(
          rebuilt_.inserted(format::encode_build_id_entry(format::kHeaderBuildId, mode, pid,
                                                          m.build_id->view(), name, e),
                            r, e));
      if (!st.ok()) return st;
    }
  }
  return out.emit(rebuilt_.map_without_build_id(r, s));
}

absl::Status Compat::sample(const transform::RecordRef& r, const transform::Session& s,
                            transform::RecordSink& out) {
  const format::EventAttr* attr = s.attr_for(r);
  if (attr == nullptr || (attr->flags & kAttrDeferCallchain) == 0) return out.emit(r);
  auto fields = format::locate_sample_fields(r.bytes, s.endian(), *attr, r.offset);
  if (!fields.ok()) return fields.status();
  const std::optional<uint64_t> cookie =
      format::deferred_cookie(format::callchain_entries(r.bytes, s.endian(), *fields));
  if (!cookie) return out.emit(r);
  const uint32_t tid = (attr->sample_type & format::kSampleTid) ? fields->head.tid : 0;
  // The kernel writes the deferred record when the task returns to user space, so few wait.
  if (!waiting_.hold({tid, *cookie, *fields, transform::OwnedRecord(r)}, r.bytes.size())) {
    return absl::OkStatus();
  }
  waiting_.flushed_early();
  report_.early_flushes = waiting_.early_flushes();
  for (Waiting& w : waiting_.take_all()) {
    if (auto st = send_waiting(w.record, w.fields, nullptr, s, out); !st.ok()) return st;
  }
  return end_held_round(r, s, out);
}

absl::Status Compat::end_held_round(const transform::RecordRef& after, const transform::Session& s,
                                    transform::RecordSink& out) {
  if (!waiting_.empty() || !round_held_) return absl::OkStatus();
  round_held_ = false;
  return out.emit(rebuilt_.inserted(finished_round(s.endian()), after, s.endian()));
}

absl::Status Compat::send_waiting(transform::OwnedRecord& sample,
                                  const format::SampleFields& fields,
                                  const std::vector<uint64_t>* user, const transform::Session& s,
                                  transform::RecordSink& out) {
  const format::Endian& e = s.endian();
  const transform::RecordRef was = sample.view();
  // The kernel part, without the marker and its cookie; then the user part, marked as perf marks
  // it, where there is one.
  std::vector<uint64_t> chain = format::callchain_entries(was.bytes, e, fields);
  chain.resize(chain.size() - 2);
  if (user != nullptr) {
    if (user->empty() || user->front() != format::kContextUser) {
      chain.push_back(format::kContextUser);
    }
    chain.insert(chain.end(), user->begin(), user->end());
  }
  auto bytes = format::with_callchain(was.bytes, e, fields, chain, was.offset);
  // Past a record's 64 KiB, the sample goes without its user part.
  if (!bytes.ok() && user != nullptr) return send_waiting(sample, fields, nullptr, s, out);
  if (!bytes.ok()) return bytes.status();
  ++(user != nullptr ? report_.callchains_stitched : report_.callchains_cut);
  return out.emit(rebuilt_.inserted(*std::move(bytes), was, e));
}

absl::Status Compat::deferred(const transform::RecordRef& r, const transform::Session& s,
                              transform::RecordSink& out) {
  const uint32_t trailer = s.trailer_size(r);
  auto d = format::decode_callchain_deferred(r.bytes, s.endian(), trailer, r.offset);
  if (!d.ok()) return d.status();
  // The trailer's TID says whose stack this is.
  std::optional<uint32_t> tid;
  const format::EventAttr* attr = s.attr_for(r);
  if (attr != nullptr && attr->sample_id_all()) {
    tid = format::decode_trailer(r.bytes.last(trailer), s.endian(), attr->sample_type).tid;
  }
  bool used = false;
  absl::Status sent;
  waiting_.filter([&](Waiting& w) {
    if (!sent.ok() || w.cookie != d->cookie || (tid && w.tid != *tid)) return true;
    sent = send_waiting(w.record, w.fields, &d->ips, s, out);
    used = true;
    return false;
  });
  if (!sent.ok()) return sent;
  if (!used) drop(r.header.type);
  return end_held_round(r, s, out);
}

absl::Status Compat::rewrite(const transform::RecordRef& r, const transform::Session& s,
                             transform::RecordSink& out) {
  const uint32_t type = r.header.type;
  if (type == format::kCallchainDeferred && !target_->knows_type(type)) return deferred(r, s, out);
  if (!target_->knows_type(type)) {
    drop(type);
    return absl::OkStatus();
  }
  switch (type) {
    case format::kHeaderAttr:
      return shrink_attr_record(r, s, out);
    case format::kHeaderFeature:
      return feature_record(r, s, out);
    case format::kHeaderBuildId:
      // An earlier pass's entry (inject's, say): this pass must not list the id again.
      if (!r.original) {
        if (auto added = format::decode_build_id_table({r.bytes, s.endian(), r.offset});
            added.ok()) {
          list(*added, listed_);
        }
      }
      return out.emit(r);
    case format::kMmap2:
      return r.map != nullptr && r.map->build_id ? plain_map(r, s, out) : out.emit(r);
    case format::kSample:
      return sample(r, s, out);
    case format::kFinishedRound:
      // Samples waiting for their user callchain go out later: the round may not end before them.
      if (waiting_.empty()) return out.emit(r);
      round_held_ = true;
      return absl::OkStatus();
    default:
      return out.emit(r);
  }
}

absl::Status Compat::finish(const transform::Session& s, transform::RecordSink& out,
                            transform::FeatureEdits& edits) {
  if (!target_) return absl::OkStatus();
  for (Waiting& w : waiting_.take_all()) {
    if (auto st = send_waiting(w.record, w.fields, nullptr, s, out); !st.ok()) return st;
  }
  const std::optional<uint32_t> output = compressed_output(s);
  const bool compressed = s.compressed_file() || s.feature(format::kFeatCompressed).has_value();
  report_.compression = !compressed || !output ? "kept"
                        : *output == 0         ? "plain"
                                               : format::record_type_name(*output);
  if (round_held_) {
    round_held_ = false;
    // Nothing to place it after but the end.
    std::vector<uint8_t> bytes = finished_round(s.endian());
    transform::RecordRef at;
    if (auto st = out.emit(rebuilt_.inserted(std::move(bytes), at, s.endian())); !st.ok()) {
      return st;
    }
  }
  if (s.pipe()) return absl::OkStatus();

  for (const auto& f : s.feature_table()) {
    if (f.id >= target_->features_end || (output == 0U && f.id == format::kFeatCompressed)) {
      edits.remove.insert(f.id);
      edits.replace.erase(f.id);
      report_.dropped_features.push_back(format::feature_name(f.id));
    }
  }

  const format::FileHeader& h = s.header();
  const std::span<const uint8_t> section = s.attrs_section();
  const uint64_t slot = h.attr_size;
  if (slot > format::kFileSectionSize && slot - format::kFileSectionSize > target_->attr_size) {
    const uint32_t attr_bytes = static_cast<uint32_t>(slot - format::kFileSectionSize);
    std::vector<uint8_t> attrs;
    for (uint64_t at = 0; at + slot <= section.size(); at += slot) {
      auto attr = shrink(section.subspan(at, attr_bytes), target_->attr_size, h.endian,
                         h.attrs.offset + at);
      if (!attr.ok()) return attr.status();
      attrs.insert(attrs.end(), attr->begin(), attr->end());
      const auto ids = section.subspan(at + attr_bytes, format::kFileSectionSize);
      attrs.insert(attrs.end(), ids.begin(), ids.end());
    }
    edits.attrs = std::move(attrs);
    edits.attr_size = target_->attr_size + format::kFileSectionSize;
  }

  if (!new_entries_.empty()) {
    std::vector<uint8_t> table;
    if (auto it = edits.replace.find(format::kFeatBuildId); it != edits.replace.end()) {
      table = it->second;
    } else if (auto f = s.feature(format::kFeatBuildId)) {
      table.assign(f->bytes.begin(), f->bytes.end());
    }
    // An earlier pass (inject) may have listed an id already.
    std::set<std::string> in_table;
    if (auto entries = format::decode_build_id_table({table, s.endian(), 0}); entries.ok()) {
      list(*entries, in_table);
    }
    const size_t before = table.size();
    for (const auto& [key, entry] : new_entries_) {
      if (!in_table.insert(key).second) continue;
      ++report_.table_entries_added;
      table.insert(table.end(), entry.begin(), entry.end());
    }
    if (table.size() != before) edits.replace[format::kFeatBuildId] = std::move(table);
  }
  return absl::OkStatus();
}

namespace {

class Kind : public RepairKind {
 public:
  std::string verb() const override { return "compat"; }
  std::string report_key() const override { return "compat"; }
  std::string summary() const override {
    return "rewrite what an older perf cannot read, for the perf named by --for VERSION";
  }
  std::string description() const override {
    return R"(Writes a recording that the perf version named by --for reads, rewriting only what that
version cannot. VERSION is like 6.1, 5.10 or 4.19 (a kernel release such as 5.10.0-21-amd64
works too), or "oldest" (3.13, the first perf that reads MMAP2 records). For that reader:

  - event attrs larger than it takes ("unsupported ABI") are shrunk to its size when the
    fields it lacks are zero; when one is set the run is refused, the field named;
  - compressed data becomes COMPRESSED (81) for readers before 6.16, and plain records for
    readers before 5.2 and for a stream read by a perf before 6.16;
  - record types it would abort on are dropped, counted by type; CALLCHAIN_DEFERRED records
    are stitched into the samples that wait for them, as perf 6.19 does when it reads them,
    so that the old reader sees whole callchains;
  - feature sections it does not know are dropped and named;
  - before 5.12, MMAP2 records that carry a build-id become plain MMAP2 records (device and
    inode unknown), and their ids go into the build-id table.

Without --for, `fix` leaves all this alone.)";
  }
  std::string required_option() const override { return "--for"; }
  void declare(Options& options) override {
    options.value("--for", "VERSION",
                  "Write for this perf version (6.1, 5.10, oldest): see `pdfix compat --help`.",
                  [this](const std::string& v) {
                    auto p = format::reader_profile(v);
                    if (!p.ok()) return p.status();
                    target_ = *p;
                    return absl::OkStatus();
                  });
  }
  std::unique_ptr<Repair> make(const Common& common) const override {
    return std::make_unique<Compat>(target_, common.look_ahead_bytes);
  }

 private:
  std::optional<format::ReaderProfile> target_;
};

}  // namespace

std::unique_ptr<RepairKind> compat_kind() { return std::make_unique<Kind>(); }

}  // namespace pdfix::passes
