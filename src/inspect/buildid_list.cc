#include "inspect/buildid_list.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "inspect/dso_hits.h"
#include "transform/open_session.h"
#include "transform/reader.h"

namespace pdfix::inspect {

absl::StatusOr<BuildIdListing> list_build_ids(io::Input& in, const BuildIdListOptions& options) {
  auto session = transform::open_session(in);
  if (!session.ok()) return session.status();
  const bool pipe = session->pipe();
  DsoHits hits(options.hits, options.look_ahead_bytes);
  const auto table = session->feature(format::kFeatBuildId);
  // The session's table grows by the HEADER_BUILD_ID records as the reader passes them.
  const auto& entries = session->build_id_table().entries;
  size_t listed = 0;
  auto list_new_entries = [&] {
    hits.add_entries({entries.begin() + static_cast<ptrdiff_t>(listed), entries.end()});
    listed = entries.size();
  };
  list_new_entries();
  // perf buildid-list's rules: AUX area traces are not decoded, so their files list everything;
  // without a table the hits are all there is.
  bool with_hits = options.hits;
  if (!pipe && session->feature(format::kFeatAuxtrace)) with_hits = false;
  if (!table && !options.every_source) with_hits = true;
  const bool read_samples = with_hits || options.count_samples;

  if (read_samples || pipe || options.every_source) {
    auto reader = transform::make_reader(in, *session, {.expand_compressed = true});
    while (true) {
      auto r = reader->next();
      if (!r.ok()) return r.status();
      if (!r->has_value()) break;
      const transform::RecordRef& rec = **r;
      // Without hits, samples need not be decoded: maps and the table name every DSO.
      if (rec.header.type == format::kSample && !read_samples) continue;
      if (auto s = hits.add(rec, *session); !s.ok()) return s;
      if (rec.header.type == format::kHeaderBuildId && !rec.trailing) list_new_entries();
    }
    hits.finish();
  }
  BuildIdListing out{
      .samples = hits.total_samples(),
      .hostname = session->hostname(),
      .osrelease = session->osrelease(),
      .kernel_text = session->kernel_start(format::kHostMachine),
      .table = entries,
      .early_flushes = hits.early_flushes(),
      .user_stacks = std::any_of(session->attrs().begin(), session->attrs().end(),
                                 [](const format::EventAttr& a) {
                                   return (a.sample_type & format::kSampleStackUser) != 0;
                                 })};
  // perf lists its table by name: a later id for a file replaces an earlier one. Samples tell the
  // DSOs apart by id, and so does a listing of everything a recording can be analysed with.
  const bool by_name = !with_hits && !options.every_source;
  absl::flat_hash_map<std::string, size_t> named;
  for (size_t i = 0; i < hits.dsos().size(); ++i) {
    if (with_hits && !hits.was_hit(i)) continue;
    const DsoBuildId& d = hits.dsos()[i];
    if (by_name) {
      auto [it, added] = named.try_emplace(absl::StrCat(d.machine, "\n", d.name), out.dsos.size());
      if (!added) {
        out.dsos[it->second].build_id = d.build_id;
        out.dsos[it->second].samples += hits.samples(i);
        continue;
      }
    }
    out.dsos.push_back(d);
    out.dsos.back().samples = hits.samples(i);
  }
  return out;
}

}  // namespace pdfix::inspect
