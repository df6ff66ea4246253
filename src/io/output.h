// Where pdfix writes. The output appears only complete: a path is written to a temporary file
// beside it and renamed over it by commit(); stdout gets the bytes only when they are all known to
// be good (file mode goes through an anonymous temporary file first, because a perf.data header is
// finished last). An Output dropped without commit() leaves nothing behind.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pdfix::io {

class Output {
 public:
  enum class Mode {
    kSeekable,   // file-mode perf.data: the header is patched at the end
    kStreaming,  // pipe-mode perf.data: bytes go out in order
  };
  // `path` "-" is stdout.
  static absl::StatusOr<std::unique_ptr<Output>> create(const std::string& path, Mode mode);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  absl::Status write(std::span<const uint8_t> bytes);
  // Copies [offset, offset+len) of the regular file `in_fd` (whose bytes are also `mapped`) in the
  // kernel when it can, so untouched runs of a recording never pass through user memory.
  absl::Status copy_from(int in_fd, uint64_t offset, std::span<const uint8_t> mapped);
  // Overwrites bytes already written (kSeekable only).
  absl::Status patch(uint64_t offset, std::span<const uint8_t> bytes);
  uint64_t position() const { return pos_; }
  absl::Status commit();

 private:
  Output(int fd, std::string target, std::string temp, bool to_stdout)
      : fd_(fd), target_(std::move(target)), temp_(std::move(temp)), to_stdout_(to_stdout) {}
  absl::Status flush();
  absl::Status write_all(const uint8_t* p, uint64_t n);

  int fd_;
  std::string target_;  // the final path; empty for stdout
  std::string temp_;    // the temporary path to rename; empty when there is none
  bool to_stdout_;
  bool committed_ = false;
  bool copy_range_ok_ = true;
  uint64_t pos_ = 0;
  std::vector<uint8_t> buf_;
};

}  // namespace pdfix::io
