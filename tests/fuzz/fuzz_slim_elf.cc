// A slim copy of any bytes as an ELF file: refused, or pieces that lie inside the file, in order,
// never overlapping, whose section header table is the file's own count of headers. Never a
// crash, never a read past the bytes given.
#include <cstdlib>
#include <span>

#include "store/slim_elf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> file(data, size);
  for (const bool unwind : {false, true}) {
    auto slim = pdfix::store::slim_elf(file, {.unwind_tables = unwind});
    if (!slim.ok()) continue;
    const pdfix::store::SlimElf& s = **slim;
    uint64_t at = 0;
    uint64_t kept = 0;
    for (const pdfix::store::Piece& p : s.image.pieces) {
      if (p.offset < at || p.offset + p.bytes.size() > s.image.size) std::abort();
      at = p.offset + p.bytes.size();
      kept += p.bytes.size();
    }
    if (s.image.size != size || kept != s.kept || s.kept + s.left_out != size) std::abort();
  }
  return 0;
}
