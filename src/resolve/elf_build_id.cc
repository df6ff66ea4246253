#include "resolve/elf_build_id.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Error.h"
#include "resolve/elf_type.h"

namespace pdfix::resolve {
namespace {

// A module this large after decompression is not a module.
constexpr size_t kMaxDecompressed = size_t{1} << 30;
// What is read first of an ELF file: its header and, in every linker's layout, the program
// headers that follow it.
constexpr size_t kHeadBytes = 4096;
// A note segment larger than this holds more than build-ids and ABI tags: the file is read whole.
constexpr uint64_t kMaxNoteSegment = uint64_t{1} << 20;

// Walks a blob of notes (Elf_Nhdr, name, desc, the last two padded to `align`).
template <class ELFT>
std::optional<BuildId> build_id_in_notes(std::span<const uint8_t> notes, size_t align) {
  using Nhdr = typename ELFT::Nhdr;
  using Note = typename ELFT::Note;
  size_t pos = 0;
  while (notes.size() - pos >= sizeof(Nhdr)) {
    const auto* nhdr = reinterpret_cast<const Nhdr*>(notes.data() + pos);
    const size_t size = nhdr->getSize(align);
    if (size > notes.size() - pos) break;
    Note note(*nhdr);
    if (note.getType() == llvm::ELF::NT_GNU_BUILD_ID && note.getName() == "GNU") {
      auto desc = note.getDesc(align);
      return BuildId::from_bytes({desc.data(), desc.size()});
    }
    pos += size;
  }
  return std::nullopt;
}

bool pread_all(int fd, uint8_t* to, uint64_t n, uint64_t at) {
  while (n > 0) {
    const ssize_t got = pread(fd, to, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    to += got;
    at += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
  return true;
}

// The build-id in the note segments of a linked ELF file whose first bytes are `head`, read
// with one pread a segment: what the kernel itself reads to put a build-id in an MMAP2 record.
// nullopt when the file must be read whole to tell (no program headers within `head`, no
// build-id note in a segment: a relocatable object, or a file without a build-id).
template <class ELFT>
std::optional<BuildId> from_note_segments(int fd, std::span<const uint8_t> head,
                                          uint64_t file_size) {
  auto elf = llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(head.data()), head.size()));
  if (!elf) {
    llvm::consumeError(elf.takeError());
    return std::nullopt;
  }
  auto phdrs = elf->program_headers();
  if (!phdrs) {
    llvm::consumeError(phdrs.takeError());
    return std::nullopt;
  }
  std::vector<uint8_t> notes;
  for (const auto& ph : *phdrs) {
    const uint64_t offset = ph.p_offset;
    const uint64_t size = ph.p_filesz;
    if (ph.p_type != llvm::ELF::PT_NOTE || size == 0 || size > kMaxNoteSegment ||
        offset > file_size || size > file_size - offset || ph.p_align > 8) {
      continue;
    }
    notes.resize(size);
    if (!pread_all(fd, notes.data(), size, offset)) return std::nullopt;
    if (auto id = build_id_in_notes<ELFT>(notes, ph.p_align == 8 ? 8 : 4)) return id;
  }
  return std::nullopt;
}

template <class ELFT>
std::optional<BuildId> from_notes_of(const llvm::object::ELFFile<ELFT>& elf) {
  auto from_note = [](const typename ELFT::Note& note) -> std::optional<BuildId> {
    if (note.getType() == llvm::ELF::NT_GNU_BUILD_ID && note.getName() == "GNU") {
      auto desc = note.getDesc(4);
      return BuildId::from_bytes({desc.data(), desc.size()});
    }
    return std::nullopt;
  };
  // Walks the notes of every header of one kind (sections or segments) that holds notes.
  auto search = [&](auto headers, auto holds_notes) -> std::optional<BuildId> {
    if (!headers) {
      llvm::consumeError(headers.takeError());
      return std::nullopt;
    }
    for (const auto& h : *headers) {
      if (!holds_notes(h)) continue;
      llvm::Error err = llvm::Error::success();
      std::optional<BuildId> found;
      for (const auto& note : elf.notes(h, err)) {
        found = from_note(note);
        if (found) break;
      }
      llvm::consumeError(std::move(err));
      if (found) return found;
    }
    return std::nullopt;
  };
  // Sections first: relocatable objects (kernel modules) have no program headers.
  if (auto id = search(elf.sections(),
                       [](const auto& sec) { return sec.sh_type == llvm::ELF::SHT_NOTE; })) {
    return id;
  }
  return search(elf.program_headers(),
                [](const auto& ph) { return ph.p_type == llvm::ELF::PT_NOTE; });
}

absl::StatusOr<std::vector<uint8_t>> gunzip(std::span<const uint8_t> in) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("zlib init");
  std::vector<uint8_t> out;
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    out.resize(out.size() + (1 << 20));
    z.next_out = out.data() + out.size() - (1 << 20);
    z.avail_out = 1 << 20;
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    if (out.size() > kMaxDecompressed) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::DataLossError("not a complete gzip stream");
  return out;
}

absl::StatusOr<std::vector<uint8_t>> unxz(std::span<const uint8_t> in) {
  lzma_stream s = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK) return absl::InternalError("lzma init");
  std::vector<uint8_t> out;
  s.next_in = in.data();
  s.avail_in = in.size();
  lzma_ret rc = LZMA_OK;
  while (rc == LZMA_OK && out.size() <= kMaxDecompressed) {
    out.resize(out.size() + (1 << 20));
    s.next_out = out.data() + out.size() - (1 << 20);
    s.avail_out = 1 << 20;
    rc = lzma_code(&s, LZMA_FINISH);
    out.resize(out.size() - s.avail_out);
  }
  lzma_end(&s);
  if (rc != LZMA_STREAM_END) return absl::DataLossError("not a complete xz stream");
  return out;
}

absl::StatusOr<std::vector<uint8_t>> unzstd(std::span<const uint8_t> in) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  std::vector<uint8_t> out;
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t rc = 1;
  while (rc != 0 && out.size() <= kMaxDecompressed) {
    out.resize(out.size() + (1 << 20));
    ZSTD_outBuffer dst{out.data() + out.size() - (1 << 20), 1 << 20, 0};
    rc = ZSTD_decompressStream(ctx, &dst, &src);
    out.resize(out.size() - (1 << 20) + dst.pos);
    if (ZSTD_isError(rc) || (src.pos == src.size && dst.pos == 0)) break;
  }
  ZSTD_freeDCtx(ctx);
  if (rc != 0) return absl::DataLossError("not a complete zstd stream");
  return out;
}

}  // namespace

absl::StatusOr<std::optional<BuildId>> build_id_of_elf(std::span<const uint8_t> image) {
  if (!is_elf(image)) return absl::InvalidArgumentError("not an ELF file");
  return with_elf_type(image, [&]<class ELFT>() -> absl::StatusOr<std::optional<BuildId>> {
    auto elf = llvm::object::ELFFile<ELFT>::create(
        llvm::StringRef(reinterpret_cast<const char*>(image.data()), image.size()));
    if (!elf) {
      return absl::InvalidArgumentError(
          absl::StrCat("unreadable ELF: ", llvm::toString(elf.takeError())));
    }
    return from_notes_of(*elf);
  });
}

std::optional<BuildId> build_id_of_notes(std::span<const uint8_t> notes) {
  // The kernel writes notes in its own byte order, which is this host's when the blob comes from
  // the running system: the only case pdfix reads one.
  return build_id_in_notes<llvm::object::ELF64LE>(notes, 4);
}

absl::StatusOr<std::optional<BuildId>> build_id_of_file(const std::string& path) {
  const bool compressed = path.ends_with(".gz") || path.ends_with(".xz") || path.ends_with(".zst");
  if (!compressed) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    }
    struct stat st{};
    std::vector<uint8_t> head(kHeadBytes);
    std::optional<BuildId> id;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const auto size = static_cast<uint64_t>(st.st_size);
      head.resize(std::min<uint64_t>(size, kHeadBytes));
      if (pread_all(fd, head.data(), head.size(), 0) && is_elf(head)) {
        id = with_elf_type(head,
                           [&]<class ELFT>() { return from_note_segments<ELFT>(fd, head, size); });
      }
    }
    close(fd);
    if (id) return id;
  }
  auto buf = read_maybe_compressed(path);
  if (!buf.ok()) return buf.status();
  llvm::StringRef bytes = (*buf)->getBuffer();
  return build_id_of_elf({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

bool carries_build_id(const std::string& path, const BuildId& id) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto got = build_id_of_file(path);
  return got.ok() && got->has_value() && **got == id;
}

bool carries_build_id(std::span<const uint8_t> image, const BuildId& id) {
  auto got = build_id_of_elf(image);
  return got.ok() && got->has_value() && **got == id;
}

absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> read_maybe_compressed(const std::string& path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", file.getError().message()));
  }
  absl::StatusOr<std::vector<uint8_t>> plain;
  llvm::StringRef raw = (*file)->getBuffer();
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  if (path.ends_with(".gz")) {
    plain = gunzip(bytes);
  } else if (path.ends_with(".xz")) {
    plain = unxz(bytes);
  } else if (path.ends_with(".zst")) {
    plain = unzstd(bytes);
  } else {
    return std::move(*file);
  }
  if (!plain.ok()) return absl::DataLossError(absl::StrCat(path, ": ", plain.status().message()));
  return llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char*>(plain->data()), plain->size()), path);
}

}  // namespace pdfix::resolve
