#include "store/cache_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace pdfix::store {
namespace {

absl::Status errno_error(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status make_dirs(const std::string& dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir); ec) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

std::string parent_of(const std::string& path) {
  return std::string(llvm::sys::path::parent_path(path));
}

// A pattern for names beside `path` that no other writer uses at the same time.
std::string temp_model(const std::string& path) {
  return absl::StrCat(parent_of(path), "/.", std::string(llvm::sys::path::filename(path)),
                      ".pdfix-%%%%%%%%");
}

// `temp` renamed to `path` unless a file is there already, put there by another writer (two
// follows sharing one store) since the caller looked: then `temp` goes and the result is false.
// A file system without RENAME_NOREPLACE (EINVAL) gets rename(2): the same bytes, replaced.
absl::StatusOr<bool> rename_new(const std::string& temp, const std::string& path) {
  int r = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
  if (r != 0 && errno == EINVAL) r = ::rename(temp.c_str(), path.c_str());
  if (r == 0) return true;
  const int err = errno;
  ::unlink(temp.c_str());
  if (err == EEXIST) return false;
  errno = err;
  return errno_error("cannot rename to", path);
}

// The link, unless one is there: a link that already names another DSO of the same id is kept.
absl::StatusOr<bool> link_into_place(const std::string& link, const std::string& target) {
  struct stat st{};
  if (::lstat(link.c_str(), &st) == 0) return false;
  if (auto s = make_dirs(parent_of(link)); !s.ok()) return s;
  llvm::SmallString<256> unique;
  std::string temp;
  do {
    llvm::sys::fs::createUniquePath(temp_model(link), unique, /*MakeAbsolute=*/false);
    temp = std::string(unique);
  } while (::symlink(target.c_str(), temp.c_str()) != 0 && errno == EEXIST);
  if (::lstat(temp.c_str(), &st) != 0) return errno_error("cannot create", temp);
  // Time 0: a link's own time is when perf added the entry (resolve/cache_adds.h), and this add is
  // not perf's reading of a recording's file.
  const std::array<struct timespec, 2> epoch{};
  if (::utimensat(AT_FDCWD, temp.c_str(), epoch.data(), AT_SYMLINK_NOFOLLOW) != 0) {
    absl::Status s = errno_error("cannot set the time of", temp);
    ::unlink(temp.c_str());
    return s;
  }
  return rename_new(temp, link);
}

}  // namespace

absl::StatusOr<bool> write_new_file(const std::string& path, const FileImage& image,
                                    unsigned permissions) {
  int fd = -1;
  llvm::SmallString<256> unique;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(temp_model(path), fd, unique,
                                                           llvm::sys::fs::OF_None, permissions);
      ec) {
    return absl::InternalError(
        absl::StrCat("cannot create a file beside ", path, ": ", ec.message()));
  }
  const std::string temp(unique);
  const auto failed = [&] {
    const absl::Status s = errno_error("cannot write", temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return s;
  };
  // In steps, each step's pages of a mapped file dropped once written.
  constexpr size_t kStep = size_t{8} << 20;
  for (const Piece& p : image.pieces) {
    for (size_t step = 0; step < p.bytes.size(); step += kStep) {
      const std::span<const uint8_t> part =
          p.bytes.subspan(step, std::min(kStep, p.bytes.size() - step));
      size_t done = 0;
      while (done < part.size()) {
        const ssize_t n = ::pwrite(fd, part.data() + done, part.size() - done,
                                   static_cast<off_t>(p.offset + step + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return failed();
        done += static_cast<size_t>(n);
      }
      drop_pages(image.mapping, part);
    }
  }
  if (::ftruncate(fd, static_cast<off_t>(image.size)) != 0) return failed();
  if (::close(fd) != 0) {
    absl::Status s = errno_error("cannot write", temp);
    ::unlink(temp.c_str());
    return s;
  }
  return rename_new(temp, path);
}

absl::StatusOr<Stored> store_in_cache(const std::string& cache, const resolve::CacheEntry& entry,
                                      const FileImage& image) {
  const std::string file = absl::StrCat(cache, "/", entry.file);
  const std::string link = absl::StrCat(cache, "/", entry.link);
  struct stat st{};
  const bool had_file = ::lstat(file.c_str(), &st) == 0;
  // The link first: a writer that finds the file finds its link too, so the entry is counted
  // added by the one writer that put the file there, however two writers interleave (two follows
  // sharing a store). Until the file follows, perf takes the link to nothing for no entry.
  auto linked = link_into_place(link, entry.link_target);
  if (!linked.ok()) return linked.status();
  if (had_file) return *linked ? Stored::kAdded : Stored::kPresent;
  absl::StatusOr<bool> written = false;
  if (absl::Status made = make_dirs(parent_of(file)); !made.ok()) {
    written = made;
  } else {
    written = write_new_file(file, image, 0600);
  }
  if (!written.ok()) {
    if (*linked) ::unlink(link.c_str());
    return written.status();
  }
  return *written ? Stored::kAdded : Stored::kPresent;
}

bool holds_entry(const std::string& cache, const resolve::CacheEntry& entry) {
  struct stat st{};
  return ::lstat(absl::StrCat(cache, "/", entry.file).c_str(), &st) == 0 &&
         ::lstat(absl::StrCat(cache, "/", entry.link).c_str(), &st) == 0;
}

absl::StatusOr<Stored> store_file(const std::string& cache, const std::string& name,
                                  const FileImage& image) {
  const std::string file = absl::StrCat(cache, "/", name);
  struct stat st{};
  if (::lstat(file.c_str(), &st) == 0) return Stored::kPresent;
  if (auto s = make_dirs(parent_of(file)); !s.ok()) return s;
  auto written = write_new_file(file, image, 0600);
  if (!written.ok()) return written.status();
  return *written ? Stored::kAdded : Stored::kPresent;
}

}  // namespace pdfix::store
