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

// No PLT entry is longer: x86-64's .plt, .plt.sec and .plt.got and aarch64's .plt have 8 or 16.
constexpr uint64_t kLongestStub = 16;

}  // namespace

PltStubs::PltStubs(const llvm::object::ObjectFile& file) {
  const auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(&file);
  if (elf == nullptr) return;
  register_targets();
  for (const llvm::object::ELFPltEntry& e : elf->getPltEntries()) {
    if (!e.Symbol) continue;
    auto name = llvm::object::SymbolRef(*e.Symbol, elf).getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    for (const llvm::object::SectionRef& s : elf->sections()) {
      if (e.Address < s.getAddress() || e.Address >= s.getAddress() + s.getSize()) continue;
      stubs_.push_back({e.Address, std::min(e.Address + kLongestStub, s.getAddress() + s.getSize()),
                        name->str() + "@plt"});
      break;
    }
  }
  std::sort(stubs_.begin(), stubs_.end(),
            [](const Stub& a, const Stub& b) { return a.start < b.start; });
  // An entry of 8 bytes ends where the next stub begins.
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
