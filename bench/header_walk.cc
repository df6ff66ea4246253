// The floor for framing a file-mode perf.data: follow the 8-byte record headers of its data
// section from one to the next and count the map records, decoding and copying nothing else. The
// bench times it as a whole process beside cp and pdfix. Two ways to reach the headers:
//   pdfix_header_walk FILE          pread in 256 KiB chunks into one reused buffer;
//   pdfix_header_walk --mmap FILE   map the file and touch each header where it is.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

constexpr uint64_t kChunk = uint64_t{256} << 10;

uint64_t u64_at(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const bool mapped = argc == 3 && std::string_view(argv[1]) == "--mmap";
  if (argc != 2 && !mapped) {
    std::fprintf(stderr, "usage: pdfix_header_walk [--mmap] FILE\n");
    return 2;
  }
  const int fd = open(argv[argc - 1], O_RDONLY);
  struct stat st{};
  uint8_t header[104];
  if (fd < 0 || fstat(fd, &st) != 0 || pread(fd, header, sizeof header, 0) != sizeof header) {
    return 2;
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  const uint64_t offset = u64_at(header + 40);  // the data section: offset, size (little-endian)
  const uint64_t size = u64_at(header + 48);
  if (offset > file_size || size > file_size - offset) return 2;
  const uint8_t* map = nullptr;
  if (mapped) {
    void* p = mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return 2;
    map = static_cast<const uint8_t*>(p);
  }
  std::vector<uint8_t> chunk(kChunk);
  uint64_t chunk_at = UINT64_MAX;
  uint64_t records = 0;
  uint64_t maps = 0;
  for (uint64_t pos = offset; pos + 8 <= offset + size;) {
    uint8_t h[8];
    if (map != nullptr) {
      std::memcpy(h, map + pos, 8);
    } else {
      if (pos / kChunk * kChunk != chunk_at) {
        chunk_at = pos / kChunk * kChunk;
        if (pread(fd, chunk.data(), kChunk, static_cast<off_t>(chunk_at)) < 0) return 2;
      }
      if (pos + 8 <= chunk_at + kChunk) {
        std::memcpy(h, chunk.data() + (pos - chunk_at), 8);
      } else if (pread(fd, h, 8, static_cast<off_t>(pos)) != 8) {
        return 2;
      }
    }
    uint32_t type = 0;
    uint16_t len = 0;
    std::memcpy(&type, h, 4);
    std::memcpy(&len, h + 6, 2);
    if (len < 8) return 1;
    maps += type == 1 || type == 10;
    ++records;
    pos += len;
  }
  std::printf("%llu records, %llu maps\n", static_cast<unsigned long long>(records),
              static_cast<unsigned long long>(maps));
  return 0;
}
