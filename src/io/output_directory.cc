#include "io/output_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "io/cleanup.h"

namespace pdfix::io {
namespace {

absl::Status errno_status(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

bool is_part_name(const std::string& name) {
  return name == "data" || (name.size() > 5 && name.starts_with("data.") &&
                            name.find_first_not_of("0123456789", 5) == std::string::npos);
}

// Removes the files of a directory recording at `path` (only those), then the directory.
void remove_recording(const std::string& path) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename();
    if (is_part_name(name) || name.starts_with(".data")) unlink(entry.path().c_str());
  }
  rmdir(path.c_str());
}

}  // namespace

bool is_directory_recording(const std::string& path) {
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (!is_part_name(entry.path().filename()) || !entry.is_regular_file(ec) ||
        entry.is_symlink(ec)) {
      return false;
    }
  }
  return !ec;
}

absl::StatusOr<std::unique_ptr<OutputDirectory>> OutputDirectory::create(const std::string& path) {
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0 && !is_directory_recording(path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        " exists and is not a perf directory recording (a directory of `data` and data.N "
        "files); a directory recording is written as one, so it is left alone (give another "
        "OUT, or --single-file)"));
  }
  const std::string trimmed = path.ends_with('/') ? path.substr(0, path.size() - 1) : path;
  const auto slash = trimmed.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : trimmed.substr(0, slash + 1);
  std::string temp = absl::StrCat(dir, slash == std::string::npos ? "/" : "",
                                  temp_prefix(trimmed.substr(slash + 1)), "XXXXXX");
  if (mkdtemp(temp.data()) == nullptr) {
    return errno_status(absl::StrCat("cannot create a temporary directory beside ", path));
  }
  return std::unique_ptr<OutputDirectory>(new OutputDirectory(trimmed, temp));
}

OutputDirectory::OutputDirectory(std::string target, std::string temp)
    : target_(std::move(target)), temp_(std::move(temp)) {
  slots_.push_back(remember_temp(temp_, /*directory=*/true));
}

OutputDirectory::~OutputDirectory() {
  if (!committed_) remove_recording(temp_);
  for (int slot : slots_) forget_temp(slot);
}

absl::StatusOr<std::unique_ptr<Output>> OutputDirectory::file(const std::string& name,
                                                              Output::Mode mode,
                                                              mode_t permissions) {
  slots_.push_back(remember_temp(temp_ + "/" + name));
  return Output::create(temp_ + "/" + name, mode, permissions);
}

absl::Status OutputDirectory::commit() {
  // A recording already there is swapped with the new one in one step, then removed.
  if (renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) == 0) {
    committed_ = true;
    for (int slot : slots_) forget_temp(slot);
    slots_.clear();
    return absl::OkStatus();
  }
  if (errno != EEXIST || !is_directory_recording(target_)) {
    return errno_status(absl::StrCat("cannot rename the finished output to ", target_));
  }
  if (renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
    return errno_status(absl::StrCat("cannot put the finished output in place of ", target_));
  }
  // The old recording now sits at temp_, which is still registered: it goes either way.
  committed_ = true;
  remove_recording(temp_);
  return absl::OkStatus();
}

}  // namespace pdfix::io
