#include "transform/session.h"

#include "format/event_desc.h"
#include "format/machine.h"
#include "format/record_type.h"
#include "format/records.h"
#include "format/unfinished.h"

namespace pdfix::transform {

absl::StatusOr<Session> Session::from_file(std::span<const uint8_t> file,
                                           const format::FileHeader& header) {
  // A file perf record never ended is read as it should have been: its whole records, no features.
  const format::FileHeader h =
      format::unfinished(file, header) ? format::salvaged(file, header) : header;
  Session s(h);
  s.file_ = file;
  auto attrs = format::parse_attrs_section(file, h);
  if (!attrs.ok()) return attrs.status();
  for (format::EventAttr& attr : *attrs) {
    if (auto st = s.add_attr(std::move(attr)); !st.ok()) return st;
  }
  auto table = format::parse_feature_table(file, h);
  if (!table.ok()) return table.status();
  s.features_ = *std::move(table);
  s.learn_event_names();
  s.learn_strings();
  if (auto f = s.feature(format::kFeatBuildId)) {
    // A table that cannot be read costs its ids, not the recording: perf reads on without it.
    if (auto entries = format::decode_build_id_table(*f); entries.ok()) {
      s.table_.entries = *std::move(entries);
    }
    s.table_.sizes_from_6_12_0 = format::decode_build_id_table_6_12_0(*f).has_value();
  }
  return s;
}

void Session::learn_event_names() {
  desc_names_.clear();
  if (auto desc = feature(format::kFeatEventDesc)) {
    // A broken EVENT_DESC only costs names; perf itself reads on without them.
    if (auto events = format::decode_event_desc(*desc); events.ok()) {
      for (auto& ev : *events) desc_names_.push_back(ev.name);
    }
  }
}

void Session::learn_strings() {
  for (auto [id, field] :
       {std::pair{format::kFeatHostname, &hostname_},
        std::pair{format::kFeatOsRelease, &osrelease_}, std::pair{format::kFeatArch, &arch_}}) {
    if (auto f = feature(id)) {
      if (auto value = format::decode_string_feature(*f); value.ok()) *field = *std::move(value);
    }
  }
}

Session Session::from_pipe(const format::FileHeader& h) { return Session(h); }

absl::Status Session::add_attr(format::EventAttr attr) {
  if (attrs_.empty()) sample_id_at_ = format::sample_id_position(attr.sample_type);
  for (uint64_t id : attr.ids) id_to_attr_[id] = attrs_.size();
  if (!attrs_.empty() && attrs_.front().trailer_fields() != attr.trailer_fields()) {
    uniform_trailer_ = false;
  }
  attrs_.push_back(std::move(attr));
  return absl::OkStatus();
}

absl::Status Session::observe(const RecordRef& r) {
  const format::Endian& e = endian();
  if (r.header.type == format::kHeaderBuildId) {
    // A one-entry table whose entry header is the record's own. One that cannot be read costs
    // its id, as a broken BUILD_ID feature does; the record itself is passed on as it is.
    auto entries = format::decode_build_id_table({r.bytes, e, r.offset});
    if (!entries.ok()) return absl::OkStatus();
    for (auto& entry : *entries) {
      entry.from_record = true;
      table_.entries.push_back(std::move(entry));
    }
    return absl::OkStatus();
  }
  if (r.header.type != format::kHeaderAttr && r.header.type != format::kHeaderFeature) {
    return absl::OkStatus();
  }
  if (r.header.type == format::kHeaderAttr) {
    auto attr = format::decode_attr_record(r.bytes, e, r.offset);
    if (!attr.ok()) return attr.status();
    return add_attr(*std::move(attr));
  }
  // A feature record with nothing in it is no feature: perf ends a stream's features with one
  // numbered HEADER_LAST_FEATURE, which is a feature's number for a newer perf.
  const auto payload = format::header_feature_payload(r.bytes);
  if (r.header.type == format::kHeaderFeature && payload) {
    const int id = static_cast<int>(*format::header_feature_id(r.bytes, e));
    pipe_features_[id].assign(payload->begin(), payload->end());
    if (id == format::kFeatEventDesc) learn_event_names();
    if (id == format::kFeatBuildId) {
      if (auto entries = format::decode_build_id_table(*feature(id)); entries.ok()) {
        table_.entries.insert(table_.entries.end(), entries->begin(), entries->end());
      }
    }
    learn_strings();
  }
  return absl::OkStatus();
}

std::span<const uint8_t> Session::attrs_section() const {
  if (pipe() || header_.attrs.end() > file_.size()) return {};
  return file_.subspan(header_.attrs.offset, header_.attrs.size);
}

std::optional<uint64_t> Session::kernel_start(uint64_t machine) const {
  auto it = kernel_start_.find(machine);
  if (it == kernel_start_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<Map> Session::learn_map(const RecordRef& r) {
  auto fields = format::decode_mmap(r.bytes, endian(), trailer_size(r), r.offset);
  if (!fields.ok()) return fields.status();
  Map m;
  m.fields = *fields;
  m.kind = format::classify(fields->filename, fields->misc);
  m.machine = format::machine_of(fields->misc, fields->pid);
  if (fields->has_build_id()) {
    m.build_id = format::BuildId::from_bytes({fields->build_id.data(), fields->build_id_size});
  }
  if (m.kind == format::MapKind::kKernel) {
    // Old perf wrote the kernel map from address 0; pgoff is always the _text address.
    kernel_start_[m.machine] = fields->pgoff != 0 ? fields->pgoff : fields->start;
  }
  return m;
}

const format::EventAttr* Session::attr_for(const RecordRef& r) const {
  if (attrs_.size() <= 1) return attrs_.empty() ? nullptr : &attrs_.front();
  // perf requires every event of a session to keep its id at the same place, so the first
  // event's sample_type tells where to look.
  const format::EventAttr& first = attrs_.front();
  const std::optional<uint64_t> id =
      r.header.type == format::kSample
          ? format::sample_event_id(r.bytes, endian(), sample_id_at_)
          : format::record_event_id(r.bytes, r.header.type, endian(), first.sample_type,
                                    first.sample_id_all());
  if (!id) return nullptr;
  // Records perf synthesizes (kernel and module maps, initial threads) carry a zero trailer; perf
  // reads them with its first event, and so does pdfix.
  if (*id == 0) return &attrs_.front();
  auto it = id_to_attr_.find(*id);
  return it == id_to_attr_.end() ? nullptr : &attrs_[it->second];
}

uint32_t Session::trailer_size(const RecordRef& r) const {
  if (!format::has_sample_id_trailer(r.header.type) || attrs_.empty()) return 0;
  if (uniform_trailer_) return attrs_.front().trailer_size();
  const format::EventAttr* a = attr_for(r);
  return a == nullptr ? 0 : a->trailer_size();
}

std::string Session::event_name(size_t attr_index) const {
  if (attr_index < desc_names_.size() && !desc_names_[attr_index].empty()) {
    return desc_names_[attr_index];
  }
  return attr_index < attrs_.size() ? attrs_[attr_index].default_name() : "?";
}

std::optional<format::FeatureBytes> Session::feature(int id) const {
  if (pipe()) {
    auto it = pipe_features_.find(id);
    if (it == pipe_features_.end()) return std::nullopt;
    return format::FeatureBytes{it->second, endian(), 0};
  }
  for (const auto& f : features_) {
    if (f.id == id) {
      return format::FeatureBytes{file_.subspan(f.section.offset, f.section.size), endian(),
                                  f.section.offset};
    }
  }
  return std::nullopt;
}

}  // namespace pdfix::transform
