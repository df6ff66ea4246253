// One record as it flows through pdfix, and the decoded view of a map record that travels with it,
// so that a map is decoded and classified once however many passes look at it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "format/build_id.h"
#include "format/map_kind.h"
#include "format/records.h"

namespace pdfix::transform {

// An MMAP or MMAP2 record, decoded and classified.
struct Map {
  format::MmapRecord fields;  // `fields.filename` views the record's bytes
  format::MapKind kind = format::MapKind::kAnonymous;
  uint64_t machine = 0;                     // format::machine_of(misc, pid)
  std::optional<format::BuildId> build_id;  // the id the record carries, if any

  // The name the build-id table gives the file: the kernel is "[kernel.kallsyms]", not the
  // "[kernel.kallsyms]_text" its map record carries.
  std::string table_name() const {
    const std::string_view name = fields.filename;
    return std::string(kind == format::MapKind::kKernel ? name.substr(0, name.find(']') + 1)
                                                        : name);
  }
};

// A view of a record's bytes (the payload of TRACING_DATA/AUXTRACE included) and where it came
// from. The bytes, and `map`, need only live until the sink the record is handed to returns.
struct RecordRef {
  std::span<const uint8_t> bytes;
  format::RecordHeader header;
  uint64_t offset = 0;        // file or stream offset; for a record decoded from compressed data,
                              // the offset of the compressed record that completed it
  uint64_t inner_offset = 0;  // offset in the decompressed stream, when `inner`
  bool inner = false;         // decoded from a COMPRESSED/COMPRESSED2 record
  bool original = true;       // bytes are the input's own (not made by a pass)
  // Bytes after the last record of a stream that are no record (perf's own messages captured into
  // a piped recording, say). perf stops reading there; pdfix keeps them as they are.
  bool trailing = false;
  // MMAP and MMAP2 records that a pass sees: the record decoded. nullptr for other records.
  const Map* map = nullptr;
  // Which file of a directory recording it came from: 0 for `data` (and any other recording),
  // n + 1 for data.n. `offset` is in that file.
  uint32_t part = 0;
};

}  // namespace pdfix::transform
