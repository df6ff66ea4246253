#include "format/unfinished.h"

#include "absl/strings/str_cat.h"
#include "format/records.h"

namespace pdfix::format {

bool unfinished(std::span<const uint8_t> file, const FileHeader& h) {
  return !h.pipe && h.data.size == 0 && file.size() > h.data.offset &&
         !parse_feature_table(file, h).ok();
}

FileHeader salvaged(std::span<const uint8_t> file, const FileHeader& h) {
  FileHeader out = h;
  uint64_t at = h.data.offset;
  while (file.size() - at >= kRecordHeaderSize) {
    const RecordHeader r = read_record_header(h.endian, file.data() + at);
    // A size below a header's frames nothing (a zeroed page the kill left); one past the end is
    // the record it cut short.
    if (r.size < kRecordHeaderSize || r.size > file.size() - at) break;
    at += r.size;
  }
  out.data.size = at - h.data.offset;
  out.features.reset();
  out.unfinished = true;
  out.cut = file.size() - at;
  return out;
}

}  // namespace pdfix::format

namespace pdfix::format {

std::string unfinished_note(uint64_t cut) {
  return absl::StrCat(
      "never finished: perf record was killed or crashed before it ended this file (its header "
      "says data size 0); its whole records are read, ",
      cut == 0 ? std::string("none was cut short")
               : absl::StrCat(cut, " bytes of a record cut short at its end are lost"),
      ", and the features perf writes last (hostname, OS release, build-id table, event names) "
      "were never written");
}

}  // namespace pdfix::format
