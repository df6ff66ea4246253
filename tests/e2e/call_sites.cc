#include "e2e/call_sites.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

extern "C" void LLVMInitializeX86TargetInfo();
extern "C" void LLVMInitializeX86TargetMC();
extern "C" void LLVMInitializeX86Disassembler();

namespace pdfix::e2e {

struct CallSites::Impl {
  std::unique_ptr<llvm::MCRegisterInfo> regs;
  std::unique_ptr<llvm::MCAsmInfo> asm_info;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget;
  std::unique_ptr<llvm::MCInstrInfo> instrs;
  std::unique_ptr<llvm::MCContext> context;
  std::unique_ptr<llvm::MCDisassembler> disassembler;
  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
};

CallSites::CallSites() : impl_(std::make_unique<Impl>()) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86Disassembler();
  const llvm::Triple triple("x86_64-linux-gnu");
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple.str(), error);
  if (target == nullptr) return;
  impl_->regs.reset(target->createMCRegInfo(triple.str()));
  impl_->asm_info.reset(
      target->createMCAsmInfo(*impl_->regs, triple.str(), llvm::MCTargetOptions()));
  impl_->subtarget.reset(target->createMCSubtargetInfo(triple.str(), "", ""));
  impl_->instrs.reset(target->createMCInstrInfo());
  impl_->context = std::make_unique<llvm::MCContext>(triple, impl_->asm_info.get(),
                                                     impl_->regs.get(), impl_->subtarget.get());
  impl_->disassembler.reset(target->createMCDisassembler(*impl_->subtarget, *impl_->context));
}

CallSites::~CallSites() = default;

bool CallSites::ends_call(const std::string& path, uint64_t offset) {
  auto [seen, added] = seen_.try_emplace({path, offset}, false);
  if (!added) return seen->second;
  auto& file = impl_->files[path];
  if (!file) {
    auto read = llvm::MemoryBuffer::getFile(path, false, false);
    if (!read) return false;
    file = std::move(*read);
  }
  if (impl_->disassembler == nullptr || offset > file->getBufferSize()) return false;
  const auto* bytes = reinterpret_cast<const uint8_t*>(file->getBufferStart());
  // x86 calls are 2 to 15 bytes long: one that decodes to exactly the return address is the call.
  for (uint64_t length = 2; length <= 15 && length <= offset; ++length) {
    llvm::MCInst inst;
    uint64_t size = 0;
    const llvm::ArrayRef<uint8_t> code(bytes + offset - length, length);
    if (impl_->disassembler->getInstruction(inst, size, code, offset - length, llvm::nulls()) ==
            llvm::MCDisassembler::Success &&
        size == length && impl_->instrs->get(inst.getOpcode()).isCall()) {
      seen->second = true;
      return true;
    }
  }
  return false;
}

std::vector<std::pair<std::string, uint64_t>> CallSites::callers(
    const std::vector<std::string>& sample) {
  std::vector<std::pair<std::string, uint64_t>> out;
  bool first = true, after_signal = false;
  for (size_t i = 1; i < sample.size(); ++i) {
    const std::string& line = sample[i];
    if (line.find("([kernel.kallsyms])") != std::string::npos) continue;
    const size_t open = line.rfind(" (/");
    if (open == std::string::npos) {
      // A user frame in [vdso] or [unknown]: a frame all the same, so the next is a caller.
      first = false;
      after_signal = false;
      continue;
    }
    const size_t start = line.find_first_not_of(" \t");
    const uint64_t at = std::stoull(line.substr(start), nullptr, 16);
    const std::string dso = line.substr(open + 2, line.size() - open - 3);
    if (!first && !after_signal) out.emplace_back(dso, at + 1);
    first = false;
    after_signal = line.find(" __restore_rt ") != std::string::npos;
  }
  return out;
}

bool CallSites::starts_sigreturn(const std::string& path, uint64_t offset) {
  // mov $15, %rax; syscall: rt_sigreturn, the trampoline (glibc's __restore_rt) that the kernel
  // makes a signal handler return to. The handler's return address is its first byte.
  static constexpr uint8_t kSigreturn[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  auto it = impl_->files.find(path);
  if (it == impl_->files.end() || !it->second) return false;
  const llvm::MemoryBuffer& file = *it->second;
  return offset <= file.getBufferSize() && file.getBufferSize() - offset >= sizeof kSigreturn &&
         std::memcmp(file.getBufferStart() + offset, kSigreturn, sizeof kSigreturn) == 0;
}

std::vector<std::string> CallSites::bad(const std::vector<std::string>& sample) {
  std::vector<std::string> out;
  bool interrupted = false;  // the frame above a signal trampoline: the exact pc, no call
  for (const auto& [dso, at] : callers(sample)) {
    if (interrupted) {
      interrupted = false;
      continue;
    }
    if (ends_call(dso, at)) continue;
    if (starts_sigreturn(dso, at)) {
      interrupted = true;
      continue;
    }
    out.push_back(absl::StrCat(dso, "+0x", absl::Hex(at)));
  }
  return out;
}

}  // namespace pdfix::e2e
