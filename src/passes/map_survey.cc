#include "passes/map_survey.h"

#include <bitset>

#include "format/record_type.h"
#include "transform/open_session.h"

namespace pdfix::passes {

std::shared_ptr<const MapSurvey> MapSurvey::of(io::Input& in) {
  if (in.mapped == nullptr) return nullptr;
  return std::shared_ptr<const MapSurvey>(new MapSurvey(in));
}

const resolve::PathInodes& MapSurvey::all() const {
  if (inodes_) return *inodes_;
  inodes_.emplace();
  // A recording that cannot be read whole gives what it has: the passes meet the same error.
  auto session = transform::open_session(in_);
  if (!session.ok()) return *inodes_;
  auto reader = transform::make_reader(in_, *session, {.expand_compressed = true});
  std::bitset<128> wanted;
  wanted.set(format::kMmap2);
  while (true) {
    reader->skip_unwanted(wanted);
    auto r = reader->next();
    if (!r.ok() || !*r) break;
    if ((*r)->header.type != format::kMmap2 || (*r)->trailing) continue;
    auto m = session->learn_map(**r);
    if (!m.ok() || m->fields.has_build_id() || m->kind != format::MapKind::kFile) continue;
    (*inodes_)[{m->machine, std::string(m->fields.filename)}].insert(
        {m->fields.maj, m->fields.min, m->fields.ino});
  }
  return *inodes_;
}

}  // namespace pdfix::passes
