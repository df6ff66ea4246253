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

// A sequence of ELF notes (Elf_Nhdr, name, desc, each 4-aligned), as the kernel exports them.
std::optional<BuildId> build_id_of_notes(std::span<const uint8_t> notes);

// The file's bytes (mapped), decompressed when its name ends in .gz, .xz or .zst (kernel modules
// are shipped that way).
absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> read_maybe_compressed(const std::string& path);

}  // namespace pdfix::resolve
