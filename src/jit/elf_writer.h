// One ELF file built as LLVM's ELFYAML::Object and written by its emitter (yaml2elf): the
// sections, segments, symbols and DWARF that JIT code needs, and a GNU build-id note that is the
// SHA-1 of the file written with a zero id, so that the same content always gives the same id.
// Every address is its file offset, as in the files pdfix makes of JIT code.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "format/build_id.h"
#include "llvm/ObjectYAML/ELFYAML.h"

namespace pdfix::jit {

struct ElfImage {
  std::vector<uint8_t> bytes;
  format::BuildId id;
};

// Where the build-id note goes: after the file and program headers, before any section added.
inline constexpr uint64_t kNoteOffset = 0x200;

class ElfWriter {
 public:
  ElfWriter(uint32_t machine, bool big_endian);
  ElfWriter(const ElfWriter&) = delete;
  ElfWriter& operator=(const ElfWriter&) = delete;

  // A section of `bytes` at `address`; `executable` makes it code, else read-only data.
  void add_bytes(std::string_view name, uint64_t address, uint64_t align, bool executable,
                 std::vector<uint8_t> bytes);
  // Code that takes `size` bytes in memory and none in the file.
  void add_nobits_code(std::string_view name, uint64_t address, uint64_t size);
  struct Segment {
    uint32_t type = 0;   // PT_*
    uint32_t flags = 0;  // PF_*
    uint64_t vaddr = 0;
    std::optional<uint64_t> offset;
    std::optional<uint64_t> file_size;
    std::optional<uint64_t> mem_size;
    std::optional<uint64_t> align;
    std::string first;  // its first and last sections
    std::string last;
  };
  void add_segment(const Segment& s);
  // A local function symbol in `section`. Names may repeat (a function compiled again) and be any
  // bytes: they go into the string table as they are.
  void add_function(std::string_view name, std::string_view section, uint64_t value, uint64_t size);
  // Debug sections to write from LLVM's DWARF structures.
  llvm::DWARFYAML::Data& dwarf();

  absl::StatusOr<ElfImage> write();

 private:
  std::string_view keep(std::string_view text);
  const std::vector<uint8_t>& keep(std::vector<uint8_t> bytes);

  llvm::ELFYAML::Object obj_{};
  // What the object's StringRefs and ArrayRefs point into.
  std::deque<std::string> texts_;
  std::deque<std::vector<uint8_t>> contents_;
  std::string strtab_ = std::string(1, '\0');
  std::vector<llvm::ELFYAML::Symbol> symbols_;
};

}  // namespace pdfix::jit
