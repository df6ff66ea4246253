#include "resolve/module_layout.h"

#include <array>
#include <string>
#include <vector>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Error.h"
#include "resolve/elf_type.h"

namespace pdfix::resolve {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t align_to(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

struct Section {
  std::string name;
  uint64_t flags = 0;
  uint64_t size = 0;
  uint64_t align = 1;
};

// kernel/module: sections go to the first group whose flags they have all of and whose excluded
// flags they have none of. ".data..ro_after_init" is writable in the file; the loader marks it
// read-only-after-init itself, so it is matched by name here.
bool in_group(const Section& s, int group) {
  const bool exec = (s.flags & llvm::ELF::SHF_EXECINSTR) != 0;
  const bool write = (s.flags & llvm::ELF::SHF_WRITE) != 0;
  const bool ro_after_init = s.name == ".data..ro_after_init";
  switch (group) {
    case 0:
      return exec;
    case 1:
      return !write && !ro_after_init;
    case 2:
      return ro_after_init;
    default:
      return write;
  }
}

bool is_init(const std::string& name) { return name.starts_with(".init"); }

// The sections a module loader allocates, init sections aside; an error when `image` is not a
// relocatable object.
template <class ELFT>
absl::StatusOr<std::vector<Section>> allocated_sections(std::span<const uint8_t> image) {
  auto elf = llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(image.data()), image.size()));
  if (!elf) return absl::InvalidArgumentError("not ELF: " + llvm::toString(elf.takeError()));
  if (elf->getHeader().e_type != llvm::ELF::ET_REL) {
    return absl::InvalidArgumentError("not a kernel module (a relocatable ELF object)");
  }
  auto headers = elf->sections();
  if (!headers) {
    return absl::InvalidArgumentError("not ELF: " + llvm::toString(headers.takeError()));
  }
  std::vector<Section> sections;
  for (const auto& sec : *headers) {
    if ((sec.sh_flags & llvm::ELF::SHF_ALLOC) == 0) continue;
    auto name = elf->getSectionName(sec);
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (is_init(name->str())) continue;
    sections.push_back({name->str(), sec.sh_flags, sec.sh_size,
                        sec.sh_addralign == 0 ? uint64_t{1} : uint64_t{sec.sh_addralign}});
  }
  return sections;
}

}  // namespace

absl::StatusOr<ModuleLayout> module_layout(std::span<const uint8_t> elf) {
  if (!is_elf(elf)) return absl::InvalidArgumentError("not ELF: not an ELF file");
  auto found = with_elf_type(elf, [&]<class ELFT>() { return allocated_sections<ELFT>(elf); });
  if (!found.ok()) return found.status();
  const std::vector<Section>& sections = *found;
  ModuleLayout layout;
  std::vector<bool> placed(sections.size(), false);
  for (int group = 0; group < 4; ++group) {
    for (size_t i = 0; i < sections.size(); ++i) {
      if (placed[i] || !in_group(sections[i], group)) continue;
      placed[i] = true;
      layout.size = align_to(layout.size, sections[i].align);
      if (sections[i].name == ".text") layout.text_offset = layout.size;
      layout.size += sections[i].size;
    }
    layout.size = align_to(layout.size, kPage);
  }
  return layout;
}

}  // namespace pdfix::resolve
