// Writes a recording back out: file mode (the input's own layout, with the data size, the feature
// table, the feature bitmap and the AUXTRACE index recomputed) or pipe mode (records in order).
// Runs of untouched records are written straight from the input's mapping.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "io/input.h"
#include "io/output.h"
#include "transform/pass.h"
#include "transform/session.h"
#include "transform/zstd_stream.h"

namespace pdfix::transform {

class Writer : public RecordSink {
 public:
  enum class Compression {
    kKeep,        // COMPRESSED records are copied; records inside them must come through unchanged
    kRecompress,  // records inside are compressed anew into one fresh zstd stream
  };
  // What the output file is: a whole recording, or one data.N file of a directory recording (bare
  // records, compressed on their own).
  enum class Layout { kRecording, kBareRecords };
  // `mapped` is the input file when it is one (for copies from the mapping), else nullptr; `parts`
  // the data.N files of a directory recording, whose records may come here too (RecordRef::part).
  Writer(io::Output& out, const Session& session, const io::MappedFile* mapped,
         Compression compression, std::vector<const io::MappedFile*> parts = {},
         Layout layout = Layout::kRecording);

  // The zstd level of data compressed anew (the input's own level is not taken: perf's -z 22 costs
  // a hundred times the time of the fast level perf uses by default).
  void set_zstd_level(int level) { zstd_level_ = level; }
  // With kRecompress: the type records inside compressed data are written as, whatever the input
  // used: COMPRESSED, COMPRESSED2, or 0 for plain records.
  void set_compressed_output(uint32_t type) { forced_type_ = type; }
  static constexpr int kDefaultZstdLevel = 1;

  // Writes everything before the first record: the file header and all that precedes the data
  // section, or the pipe header.
  absl::Status begin();
  absl::Status emit(const RecordRef& r) override;
  // Input bytes [offset, offset + size) of file `part` (see RecordRef::part) go out as they are: a
  // run of untouched plain records.
  absl::Status emit_untouched(uint64_t offset, uint64_t size, uint32_t part = 0);
  // Writes the feature sections (with `edits` applied) and completes the header.
  absl::Status finish(const FeatureEdits& edits);

 private:
  absl::Status write_original(const RecordRef& r);
  absl::Status write_bytes(std::span<const uint8_t> bytes);
  // Data-section bytes go out through here, held while the pad is undecided.
  absl::Status put(std::span<const uint8_t> bytes);
  // Writes `pad` zero bytes before the data section, then what was held.
  absl::Status settle_pad(uint64_t pad);
  // Writes the first `len` bytes of the pending run (all of it by default); the rest stays pending.
  absl::Status flush_run(uint64_t len = UINT64_MAX);
  // Hands [begin, begin + len) of `from` to the output: from the reader's chunks, or, where the
  // output shares blocks with the input, as a range of the mapping to clone.
  absl::Status send(const io::MappedFile& from, uint64_t begin, uint64_t len);
  absl::Status flush_compressed(bool all);
  absl::Status write_features(const FeatureEdits& edits, uint64_t new_data_end);
  absl::Status write_attrs(const FeatureEdits& edits);
  // The output's file header: the input's, with what the data, the passes and `bits` changed.
  absl::Status patch_header(const FeatureEdits& edits, uint64_t new_data_end,
                            const std::bitset<format::kFeatureBits>& bits);

  io::Output& out_;
  const Session& session_;
  const io::MappedFile* mapped_;
  Compression compression_;
  std::vector<const io::MappedFile*> parts_;
  Layout layout_;

  uint64_t pos_ = 0;  // logical output position, including the pending run
  uint64_t run_begin_ = 0;
  uint64_t run_len_ = 0;
  uint32_t run_part_ = 0;
  uint64_t page_size_;

  // File mode only: zero bytes between what precedes the data section and its records.
  bool aligning_ = false;  // data-section bytes are held until the pad is decided
  uint64_t data_pad_ = 0;
  std::vector<uint8_t> held_;

  int zstd_level_ = kDefaultZstdLevel;
  std::optional<ZstdEncoder> zstd_;
  std::vector<uint8_t> to_compress_;
  uint32_t compressed_type_ = 0;
  std::optional<uint32_t> forced_type_;
  std::vector<uint8_t> scratch_;

  // Where each AUXTRACE record moved to, by its input offset.
  absl::flat_hash_map<uint64_t, uint64_t> auxtrace_moves_;
};

}  // namespace pdfix::transform
