// Records a pass makes: one built in place of another, or one inserted before it. The bytes (and a
// map's decoded view) live here until the next record is made, which is long enough: a sink
// copies what it keeps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "format/build_id.h"
#include "transform/record.h"
#include "transform/session.h"

namespace pdfix::transform {

class Rebuilt {
 public:
  // `from` (an MMAP or MMAP2 with its map decoded) as an MMAP2 that carries `id` (in place of the
  // one it carried, if any); everything else in it, the sample_id trailer included, is kept.
  RecordRef map_with_build_id(const RecordRef& from, const format::BuildId& id, const Session& s);
  // `from` (an MMAP2 that carries a build-id) without it: dev/ino unknown (zero), as an MMAP2 of
  // a file perf could not stat. For an id known to be wrong.
  RecordRef map_without_build_id(const RecordRef& from, const Session& s);
  // `from` (an MMAP2 whose MMAP_BUILD_ID bit the kernel leaked onto its dev/ino,
  // format::MmapRecord::build_id_bit_leaked) as it was meant: the bit cleared, all else kept.
  RecordRef map_without_leaked_bit(const RecordRef& from, const Session& s);
  // A new MMAP2 of `fields` carrying `id`, with `trailer` for its sample_id, placed where `at` is:
  // a map the input did not have (of a file a pass wrote).
  RecordRef new_map(const format::MmapRecord& fields, const format::BuildId& id,
                    std::span<const uint8_t> trailer, const RecordRef& at, const Session& s);
  // `bytes` (a whole record of a type that is no map) placed where `at` is.
  RecordRef inserted(std::vector<uint8_t> bytes, const RecordRef& at, const format::Endian& e);
  // The same over bytes the caller keeps until the sink it hands the record to returns.
  static RecordRef placed(std::span<const uint8_t> bytes, const RecordRef& at,
                          const format::Endian& e);

 private:
  // `from` as bytes_ and map_ now hold it: its header's misc map_'s, its filename in bytes_.
  RecordRef copied(const RecordRef& from, const Session& s);
  std::vector<uint8_t> bytes_;
  Map map_;
};

}  // namespace pdfix::transform
