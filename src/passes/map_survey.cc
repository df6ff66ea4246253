#include "passes/map_survey.h"

#include "format/record_type.h"
#include "jit/jitdump.h"
#include "transform/time_order.h"

namespace pdfix::passes {

std::bitset<128> MapSurvey::wanted() const {
  std::bitset<128> types;
  types.set(format::kMmap);
  types.set(format::kMmap2);
  return types;
}

void MapSurvey::see(const transform::RecordRef& r, transform::Session& s) {
  if (r.trailing) return;
  auto m = s.learn_map(r);
  if (!m.ok() || m->fields.has_build_id() || m->kind != format::MapKind::kFile) return;
  const resolve::Inode inode{m->fields.maj, m->fields.min, m->fields.ino};
  if (m->fields.is_mmap2) inodes_[{m->machine, std::string(m->fields.filename)}].insert(inode);
  if (m->fields.is_mmap2 && !format::is_kernel_mode(m->fields.misc)) {
    process_files_.try_emplace(m->fields.pid, inode);
  }
  if (jit::marker_pid(m->fields)) {
    jit_markers_.try_emplace(m->fields.pid,
                             JitMarker{std::string(m->fields.filename), m->fields.is_mmap2, inode,
                                       transform::record_time(r, s)});
  }
}

}  // namespace pdfix::passes
