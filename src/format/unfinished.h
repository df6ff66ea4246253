// A file whose perf record was killed (SIGKILL, a crash, the disk full) before it ended it: perf
// writes the header first with a data size of 0 and the feature sections last, so such a file has
// its attrs and its records, and neither the data size nor any feature. perf 6.1 cannot read it
// ("failed to process sample"). What the records say is all there: every whole record up to the
// end is kept, the record the kill cut short is not.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "format/file_header.h"

namespace pdfix::format {

// Whether `h` (parsed from `file`, the whole file) is such a file: a data size of 0 with bytes
// after the data's start, and a feature table there that cannot be read.
bool unfinished(std::span<const uint8_t> file, const FileHeader& h);

// `h` as the file should have said: the data section the whole records fill, no features.
// `h.cut` is what was lost at the end (a record cut short; bytes that frame no record).
FileHeader salvaged(std::span<const uint8_t> file, const FileHeader& h);

// What is said of such a file, with the bytes `cut` at its end, in perf's terms.
std::string unfinished_note(uint64_t cut);

}  // namespace pdfix::format
