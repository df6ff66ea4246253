// Where a directory recording (perf record --threads) is written: its files are made in a
// temporary directory beside the target, which takes the target's place when all are complete.
// Dropped without commit(), it leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/output.h"

namespace pdfix::io {

class OutputDirectory {
 public:
  // `path` must not exist, or be a directory recording (nothing in it but `data` and data.N
  // files), which is replaced. Nothing else is ever replaced.
  static absl::StatusOr<std::unique_ptr<OutputDirectory>> create(const std::string& path);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  // A file of the recording ("data", "data.0", ...), complete when its Output is committed.
  absl::StatusOr<std::unique_ptr<Output>> file(const std::string& name, Output::Mode mode,
                                               mode_t permissions);
  // After every file's Output is committed: the directory takes the target's place.
  absl::Status commit();

 private:
  OutputDirectory(std::string target, std::string temp);

  std::string target_;
  std::string temp_;
  std::vector<int> slots_;  // registrations with io/cleanup.h: the files, then the directory
  bool committed_ = false;
};

// Whether `path` is a directory that holds nothing but `data` and data.N regular files.
bool is_directory_recording(const std::string& path);

}  // namespace pdfix::io
