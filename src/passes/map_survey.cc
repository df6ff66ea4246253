#include "passes/map_survey.h"

#include <bitset>

#include "format/record_type.h"
#include "jit/jitdump.h"
#include "transform/open_session.h"
#include "transform/time_order.h"

namespace pdfix::passes {

std::shared_ptr<const MapSurvey> MapSurvey::of(io::Input& in) {
  if (in.mapped == nullptr) return nullptr;
  return std::shared_ptr<const MapSurvey>(new MapSurvey(in));
}

const resolve::PathInodes& MapSurvey::all() const {
  read();
  return inodes_;
}

const std::map<uint32_t, JitMarker>& MapSurvey::jit_markers() const {
  read();
  return jit_markers_;
}

void MapSurvey::read() const {
  if (read_) return;
  read_ = true;
  // A recording that cannot be read whole gives what it has: the passes meet the same error.
  auto session = transform::open_session(in_);
  if (!session.ok()) return;
  auto reader = transform::make_reader(in_, *session, {.expand_compressed = true});
  std::bitset<128> wanted;
  wanted.set(format::kMmap);
  wanted.set(format::kMmap2);
  while (true) {
    reader->skip_unwanted(wanted);
    auto r = reader->next();
    if (!r.ok() || !*r) break;
    const uint32_t type = (*r)->header.type;
    if ((type != format::kMmap2 && type != format::kMmap) || (*r)->trailing) continue;
    auto m = session->learn_map(**r);
    if (!m.ok() || m->fields.has_build_id() || m->kind != format::MapKind::kFile) continue;
    const resolve::Inode inode{m->fields.maj, m->fields.min, m->fields.ino};
    if (m->fields.is_mmap2) {
      inodes_[{m->machine, std::string(m->fields.filename)}].insert(inode);
    }
    if (!format::is_kernel_mode(m->fields.misc) && jit::jitdump_pid(m->fields.filename)) {
      jit_markers_.try_emplace(m->fields.pid,
                               JitMarker{std::string(m->fields.filename), m->fields.is_mmap2, inode,
                                         transform::record_time(**r, *session)});
    }
  }
}

}  // namespace pdfix::passes
