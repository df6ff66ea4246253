#include "transform/rebuilt.h"

#include <algorithm>

#include "format/machine.h"
#include "format/map_kind.h"

namespace pdfix::transform {

RecordRef Rebuilt::map_with_build_id(const RecordRef& from, const format::BuildId& id,
                                     const Session& s) {
  const format::Endian& e = s.endian();
  const Map& old = *from.map;
  bytes_ = format::encode_mmap2_with_build_id(old.fields, id.view(),
                                              from.bytes.last(s.trailer_size(from)), e);
  // The new record's view follows from the old one; decoding the bytes again would tell no more.
  map_ = old;
  map_.build_id = id;
  map_.fields.is_mmap2 = true;
  map_.fields.misc = old.fields.misc | format::kMiscMmapBuildId;
  map_.fields.maj = map_.fields.min = 0;
  map_.fields.ino = map_.fields.ino_generation = 0;
  const format::ProtFlags pf = format::mmap2_prot_flags(old.fields);
  map_.fields.prot = pf.prot;
  map_.fields.flags = pf.flags;
  map_.fields.build_id_size = id.size;
  std::copy(id.bytes.begin(), id.bytes.end(), map_.fields.build_id.begin());
  map_.fields.filename = {
      reinterpret_cast<const char*>(bytes_.data()) + format::kMmap2FilenameOffset,
      old.fields.filename.size()};
  RecordRef r = from;
  r.bytes = bytes_;
  r.header = format::read_record_header(e, bytes_.data());
  r.original = false;
  r.map = &map_;
  return r;
}

RecordRef Rebuilt::copied(const RecordRef& from, const Session& s) {
  RecordRef r = from;
  r.bytes = bytes_;
  r.header.misc = map_.fields.misc;
  format::write_record_header(s.endian(), bytes_.data(), r.header);
  const auto at = static_cast<size_t>(from.map->fields.filename.data() -
                                      reinterpret_cast<const char*>(from.bytes.data()));
  map_.fields.filename = {reinterpret_cast<const char*>(bytes_.data()) + at,
                          from.map->fields.filename.size()};
  r.original = false;
  r.map = &map_;
  return r;
}

RecordRef Rebuilt::map_without_leaked_bit(const RecordRef& from, const Session& s) {
  bytes_.assign(from.bytes.begin(), from.bytes.end());
  map_ = *from.map;
  return copied(from, s);
}

RecordRef Rebuilt::map_without_build_id(const RecordRef& from, const Session& s) {
  bytes_.assign(from.bytes.begin(), from.bytes.end());
  map_ = *from.map;
  map_.build_id.reset();
  map_.fields.misc = from.map->fields.misc & ~format::kMiscMmapBuildId;
  map_.fields.build_id_size = 0;
  map_.fields.build_id = {};
  map_.fields.maj = map_.fields.min = 0;
  map_.fields.ino = map_.fields.ino_generation = 0;
  // The 24 bytes of the build-id become maj, min, ino and ino_generation, all zero.
  std::fill(bytes_.begin() + format::kMmap2IdOffset, bytes_.begin() + format::kMmap2ProtOffset, 0);
  return copied(from, s);
}

RecordRef Rebuilt::new_map(const format::MmapRecord& fields, const format::BuildId& id,
                           std::span<const uint8_t> trailer, const RecordRef& at,
                           const Session& s) {
  RecordRef r = inserted(format::encode_mmap2_with_build_id(fields, id.view(), trailer, s.endian()),
                         at, s.endian());
  map_ = Map{.fields = fields,
             .kind = format::classify(fields.filename, fields.misc),
             .machine = format::machine_of(fields.misc, fields.pid),
             .build_id = id};
  map_.fields.is_mmap2 = true;
  map_.fields.misc = r.header.misc;
  map_.fields.build_id_size = id.size;
  std::copy(id.bytes.begin(), id.bytes.end(), map_.fields.build_id.begin());
  map_.fields.filename = {
      reinterpret_cast<const char*>(bytes_.data()) + format::kMmap2FilenameOffset,
      fields.filename.size()};
  r.map = &map_;
  return r;
}

RecordRef Rebuilt::inserted(std::vector<uint8_t> bytes, const RecordRef& at,
                            const format::Endian& e) {
  bytes_ = std::move(bytes);
  return placed(bytes_, at, e);
}

RecordRef Rebuilt::placed(std::span<const uint8_t> bytes, const RecordRef& at,
                          const format::Endian& e) {
  RecordRef r;
  r.bytes = bytes;
  r.header = format::read_record_header(e, bytes.data());
  r.offset = at.offset;
  r.inner = at.inner;
  r.part = at.part;
  r.original = false;
  return r;
}

}  // namespace pdfix::transform
