#include "store/file_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace pdfix::store {

void drop_pages(std::span<const uint8_t> mapping, std::span<const uint8_t> written) {
  const auto start = reinterpret_cast<uintptr_t>(written.data());
  const auto first = reinterpret_cast<uintptr_t>(mapping.data());
  if (written.empty() || start < first || start + written.size() > first + mapping.size()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // The pages wholly inside: from the first page boundary in it, whole pages.
  const size_t head = (page - start % page) % page;
  const size_t length = written.size() > head ? (written.size() - head) / page * page : 0;
  // A hint: where it fails, the pages stay, as they would have.
  if (length > 0) {
    ::madvise(const_cast<uint8_t*>(written.data() + head), length, MADV_DONTNEED);
  }
}

FileImage data_of(const std::string& path, std::span<const uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileImage::whole(bytes);
  const auto size = static_cast<off_t>(bytes.size());
  FileImage image{bytes.size(), {}};
  off_t at = 0;
  while (at < size) {
    const off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // only a hole to the end
    off_t hole = data < 0 ? -1 : ::lseek(fd, data, SEEK_HOLE);
    if (data < 0 || hole < 0 || data >= size) {
      ::close(fd);
      return FileImage::whole(bytes);
    }
    hole = std::min(hole, size);
    image.pieces.push_back(
        {static_cast<uint64_t>(data),
         bytes.subspan(static_cast<size_t>(data), static_cast<size_t>(hole - data))});
    at = hole;
  }
  ::close(fd);
  return image;
}

}  // namespace pdfix::store
