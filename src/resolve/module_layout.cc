#include "resolve/module_layout.h"

#include <array>
#include <string>
#include <vector>

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Error.h"
#include "resolve/elf_build_id.h"

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

}  // namespace

absl::StatusOr<ModuleLayout> module_layout(std::span<const uint8_t> elf) {
  llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char*>(elf.data()), elf.size()),
                            "module");
  auto obj = llvm::object::ObjectFile::createObjectFile(ref);
  if (!obj) {
    return absl::InvalidArgumentError("not ELF: " + llvm::toString(obj.takeError()));
  }
  auto* file = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->get());
  if (file == nullptr || file->getEType() != llvm::ELF::ET_REL) {
    return absl::InvalidArgumentError("not a kernel module (a relocatable ELF object)");
  }
  std::vector<Section> sections;
  for (const llvm::object::ELFSectionRef sec : file->sections()) {
    if ((sec.getFlags() & llvm::ELF::SHF_ALLOC) == 0) continue;
    auto name = sec.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (is_init(name->str())) continue;
    sections.push_back({name->str(), sec.getFlags(), sec.getSize(), sec.getAlignment().value()});
  }
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
  auto id = build_id_of_elf(elf);
  if (id.ok()) layout.build_id = *id;
  return layout;
}

}  // namespace pdfix::resolve
