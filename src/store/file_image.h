// The bytes of a file to keep, as views: a whole file is one piece; a slim copy
// (store/slim_elf.h) is a few pieces at their own offsets with holes of zeros between, which a
// bundle stores as a sparse tar entry and a cache as a sparse file. Nothing is copied: each
// piece views the mapped file (or the one buffer that owns it).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pdfix::store {

struct Piece {
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
};

struct FileImage {
  uint64_t size = 0;
  std::vector<Piece> pieces;  // sorted by offset, not overlapping, inside `size`
  // The file's read-only mapping that pieces view, if they do: a writer drops the pages of it
  // that it has written from the process (they read back from the file if needed), so that
  // keeping a large binary does not grow the process by its size. Empty: the bytes are memory of
  // the process's own, which is never dropped.
  std::span<const uint8_t> mapping;

  static FileImage whole(std::span<const uint8_t> bytes) {
    return {bytes.size(), {Piece{0, bytes}}};
  }
  // Whether some of its bytes are holes.
  bool sparse() const {
    uint64_t data = 0;
    for (const Piece& p : pieces) data += p.bytes.size();
    return data != size;
  }
};

// Drops the pages wholly inside `written` from the process when they lie in `mapping` (a mapped
// file's bytes); nothing otherwise (memory of the process's own would be lost).
void drop_pages(std::span<const uint8_t> mapping, std::span<const uint8_t> written);

// The file at `path`, whose bytes `bytes` maps, as its pieces of data: an unpacked slim copy
// keeps its holes when it is copied on. Where the file system does not say where its holes are,
// the whole file.
FileImage data_of(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace pdfix::store
