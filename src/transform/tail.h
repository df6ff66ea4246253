// The end of a pipeline's sweep: where records go once the passes are done with them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "io/input.h"
#include "transform/pass.h"
#include "transform/record.h"
#include "transform/session.h"
#include "transform/tap.h"

namespace pdfix::transform {

// Where a sweep sends records: what the passes emit, what bypasses them, and runs of untouched
// input.
class Tail : public RecordSink {
 public:
  virtual absl::Status bypass(const RecordRef& r) = 0;
  // Bytes [offset, offset + size) of file `part` (see RecordRef::part).
  virtual absl::Status untouched(uint64_t offset, uint64_t size, uint32_t part) = 0;
};

// Shows the tap each record on its way to `next`, those of untouched runs too: they are framed
// again from the input, and still go on as runs, to be copied whole.
class TappedTail : public Tail {
 public:
  // `parts`: the input's files, by RecordRef::part.
  TappedTail(Tail& next, RecordTap& tap, const Session& s, std::vector<const io::MappedFile*> parts)
      : next_(next), tap_(tap), session_(s), parts_(std::move(parts)) {}
  absl::Status emit(const RecordRef& r) override;
  absl::Status bypass(const RecordRef& r) override;
  absl::Status untouched(uint64_t offset, uint64_t size, uint32_t part) override;

 private:
  absl::Status show(const RecordRef& r);
  // Whether chunk_ is now the chunk of `file` that holds `at` (none when it cannot be read).
  bool chunk_for(const io::MappedFile& file, uint64_t at);
  std::span<const uint8_t> bytes_at(const io::MappedFile& file, uint64_t at, uint64_t n);

  Tail& next_;
  RecordTap& tap_;
  const Session& session_;
  std::vector<const io::MappedFile*> parts_;
  const io::MappedFile* chunk_file_ = nullptr;  // the file chunk_ is of
  std::shared_ptr<const io::Chunk> chunk_;
  std::vector<uint8_t> across_;  // the last record read across a chunk's end
};

}  // namespace pdfix::transform
