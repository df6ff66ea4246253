#include "inspect/buildid_list.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "format/records.h"
#include "transform/open_session.h"
#include "transform/reader.h"

namespace pdfix::inspect {

DsoLister::DsoLister(const transform::Session& s, const BuildIdListOptions& options)
    : options_(options), pipe_(s.pipe()), hits_(options.hits, options.look_ahead_bytes) {
  // perf buildid-list's rules: AUX area traces are not decoded, so their files list everything;
  // without a table the hits are all there is.
  with_hits_ = options.hits;
  if (!pipe_ && s.feature(format::kFeatAuxtrace)) with_hits_ = false;
  if (!s.feature(format::kFeatBuildId) && !options.every_source) with_hits_ = true;
  read_samples_ = with_hits_ || options.count_samples;
}

bool DsoLister::reads_records() const { return read_samples_ || pipe_ || options_.every_source; }

absl::Status DsoLister::add(const transform::RecordRef& r, const transform::Session& s) {
  // Without hits, samples need not be decoded: maps and the table name every DSO.
  if (r.header.type == format::kSample && !read_samples_) return absl::OkStatus();
  if (auto status = hits_.add(r, s); !status.ok()) return status;
  if (r.trailing) return absl::OkStatus();
  // A stream's entries, as the session learns them: a one-entry table whose entry header is the
  // record's own, or a BUILD_ID feature record. One that cannot be read costs its ids.
  absl::StatusOr<std::vector<format::BuildIdEntry>> entries;
  if (r.header.type == format::kHeaderBuildId) {
    entries = format::decode_build_id_table({r.bytes, s.endian(), r.offset});
  } else if (r.header.type == format::kHeaderFeature &&
             format::header_feature_id(r.bytes, s.endian()) == format::kFeatBuildId) {
    if (auto payload = format::header_feature_payload(r.bytes)) {
      entries = format::decode_build_id_table({*payload, s.endian(), r.offset});
    }
  } else {
    return absl::OkStatus();
  }
  if (!entries.ok()) return absl::OkStatus();
  for (auto& e : *entries) e.from_record = r.header.type == format::kHeaderBuildId;
  hits_.add_entries(*entries);
  table_.insert(table_.end(), entries->begin(), entries->end());
  return absl::OkStatus();
}

void DsoLister::add_table(std::span<const format::BuildIdEntry> table) {
  hits_.add_table(table);
  table_.insert(table_.begin(), table.begin(), table.end());
}

BuildIdListing DsoLister::finish(const transform::Session& s, bool user_stacks) {
  hits_.finish();
  BuildIdListing out{.samples = hits_.total_samples(),
                     .hostname = s.hostname(),
                     .osrelease = s.osrelease(),
                     .kernel_text = s.kernel_start(format::kHostMachine),
                     .table = table_,
                     .early_flushes = hits_.early_flushes(),
                     .user_stacks = user_stacks};
  // perf lists its table by name: a later id for a file replaces an earlier one. Samples tell the
  // DSOs apart by id, and so does a listing of everything a recording can be analysed with.
  const bool by_name = !with_hits_ && !options_.every_source;
  absl::flat_hash_map<std::string, size_t> named;
  for (size_t i = 0; i < hits_.dsos().size(); ++i) {
    if (with_hits_ && !hits_.was_hit(i)) continue;
    const DsoBuildId& d = hits_.dsos()[i];
    if (by_name) {
      auto [it, added] = named.try_emplace(absl::StrCat(d.machine, "\n", d.name), out.dsos.size());
      if (!added) {
        out.dsos[it->second].build_id = d.build_id;
        out.dsos[it->second].samples += hits_.samples(i);
        continue;
      }
    }
    out.dsos.push_back(d);
    out.dsos.back().samples = hits_.samples(i);
  }
  return out;
}

absl::StatusOr<BuildIdListing> list_build_ids(io::Input& in, const BuildIdListOptions& options) {
  auto session = transform::open_session(in);
  if (!session.ok()) return session.status();
  DsoLister lister(*session, options);
  // The file's table; a stream's grows by HEADER_BUILD_ID records, which the lister reads.
  if (!session->pipe()) lister.add_table(session->build_id_table().entries);
  if (lister.reads_records()) {
    auto reader = transform::make_reader(in, *session, {.expand_compressed = true});
    while (true) {
      auto r = reader->next();
      if (!r.ok()) return r.status();
      if (!r->has_value()) break;
      // A kernel map teaches where the kernel starts, which tells a callchain's kernel addresses
      // from its user ones, as in a pipeline.
      const transform::RecordRef& rec = **r;
      if ((rec.header.type == format::kMmap || rec.header.type == format::kMmap2) &&
          !rec.trailing) {
        if (auto m = session->learn_map(rec); !m.ok()) return m.status();
      }
      if (auto s = lister.add(rec, *session); !s.ok()) return s;
    }
  }
  return lister.finish(
      *session,
      std::any_of(session->attrs().begin(), session->attrs().end(), [](const format::EventAttr& a) {
        return (a.sample_type & format::kSampleStackUser) != 0;
      }));
}

}  // namespace pdfix::inspect
