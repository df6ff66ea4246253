// Reading the GNU build-id note of an ELF file (LLVM Object), of a module compressed with gzip, xz
// or zstd, or of a raw note blob such as /sys/kernel/notes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/build_id.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pdfix::resolve {

using format::BuildId;

// nullopt: a valid ELF without a build-id note. An error whose code is InvalidArgument: not ELF.
absl::StatusOr<std::optional<BuildId>> build_id_of_elf(std::span<const uint8_t> image);

// The build-id of the file at `path`, as build_id_of_elf(read_maybe_compressed(path)) finds it.
// A linked ELF file is not read whole: its header and note segments come with a few preads (the
// notes the kernel itself reads for an MMAP2 build-id), which costs a small fraction of mapping
// it. Errors: NotFound (cannot open), DataLoss (a broken compressed module), InvalidArgument
// (not ELF).
absl::StatusOr<std::optional<BuildId>> build_id_of_file(const std::string& path);

// Whether the regular file at `path` (a binary, a compressed module, a debug file, a cache entry)
// is ELF with build-id `id`: the one proof by content, for every search that holds a copy up to
// the id a recording names.
bool carries_build_id(const std::string& path, const BuildId& id);
// The same of an image already in memory (what a server sent).
bool carries_build_id(std::span<const uint8_t> image, const BuildId& id);

// A sequence of ELF notes (Elf_Nhdr, name, desc, each 4-aligned), as the kernel exports them.
std::optional<BuildId> build_id_of_notes(std::span<const uint8_t> notes);

// The file's bytes (mapped), decompressed when its name ends in .gz, .xz or .zst (kernel modules
// are shipped that way).
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> read_maybe_compressed(const std::string& path);

}  // namespace pdfix::resolve
