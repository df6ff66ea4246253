#include "profile/plt.h"

#include <algorithm>
#include <mutex>

#include "llvm-c/Target.h"
#include "llvm/Object/ELFObjectFile.h"

namespace pdfix::profile {
namespace {

// getPltEntries asks LLVM's target registry for the file's machine: the two pdfix reads.
void register_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86TargetMC();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64TargetMC();
  });
}

// Where each PLT section lies and how long its entries are (sh_entsize; 0: not said).
struct PltSection {
  std::string name;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t entry = 0;
};

template <typename ELFT>
std::vector<PltSection> plt_sections(const llvm::object::ELFObjectFile<ELFT>& elf) {
  std::vector<PltSection> out;
  auto sections = elf.getELFFile().sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return out;
  }
  for (const auto& s : *sections) {
    auto name = elf.getELFFile().getSectionName(s);
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (!name->starts_with(".plt")) continue;
    out.push_back({name->str(), s.sh_addr, s.sh_addr + s.sh_size, s.sh_entsize});
  }
  return out;
}

std::vector<PltSection> plt_sections(const llvm::object::ObjectFile& file) {
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(&file)) {
    return plt_sections(*e);
  }
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF64BEObjectFile>(&file)) {
    return plt_sections(*e);
  }
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(&file)) {
    return plt_sections(*e);
  }
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF32BEObjectFile>(&file)) {
    return plt_sections(*e);
  }
  return {};
}

}  // namespace

PltStubs::PltStubs(const llvm::object::ObjectFile& file) {
  const auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(&file);
  if (elf == nullptr) return;
  register_targets();
  const std::vector<PltSection> sections = plt_sections(file);
  for (const llvm::object::ELFPltEntry& e : elf->getPltEntries()) {
    if (!e.Symbol) continue;
    auto name = llvm::object::SymbolRef(*e.Symbol, elf).getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    const auto in = std::find_if(sections.begin(), sections.end(), [&](const PltSection& s) {
      return e.Address >= s.start && e.Address < s.end;
    });
    if (in == sections.end()) continue;
    stubs_.push_back(
        {e.Address, in->entry != 0 ? e.Address + in->entry : in->end, name->str() + "@plt"});
  }
  std::sort(stubs_.begin(), stubs_.end(),
            [](const Stub& a, const Stub& b) { return a.start < b.start; });
  // Where a section does not say its entries' size, a stub ends where the next begins.
  for (size_t i = 0; i + 1 < stubs_.size(); ++i) {
    stubs_[i].end = std::min(stubs_[i].end, stubs_[i + 1].start);
  }
}

std::optional<std::string> PltStubs::name_at(uint64_t address) const {
  auto it = std::upper_bound(stubs_.begin(), stubs_.end(), address,
                             [](uint64_t a, const Stub& s) { return a < s.start; });
  if (it == stubs_.begin()) return std::nullopt;
  --it;
  if (address >= it->end) return std::nullopt;
  return it->name;
}

}  // namespace pdfix::profile
