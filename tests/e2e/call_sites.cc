#include "e2e/call_sites.h"

#include <cctype>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstrAnalysis.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

extern "C" void LLVMInitializeX86TargetInfo();
extern "C" void LLVMInitializeX86TargetMC();
extern "C" void LLVMInitializeX86Disassembler();
extern "C" void LLVMInitializeAArch64TargetInfo();
extern "C" void LLVMInitializeAArch64TargetMC();
extern "C" void LLVMInitializeAArch64Disassembler();

namespace pdfix::e2e {
namespace {

// LLVM's disassembler and instruction facts for one architecture.
struct Decoder {
  std::unique_ptr<llvm::MCRegisterInfo> regs;
  std::unique_ptr<llvm::MCAsmInfo> asm_info;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget;
  std::unique_ptr<llvm::MCInstrInfo> instrs;
  std::unique_ptr<llvm::MCContext> context;
  std::unique_ptr<llvm::MCDisassembler> disassembler;
  std::unique_ptr<llvm::MCInstrAnalysis> analysis;
  // The lengths a call instruction may have: x86's 2 to 15 bytes, aarch64's 4.
  uint64_t shortest = 0, longest = 0;

  Decoder(const char* triple_name, const char* features, uint64_t shortest_call,
          uint64_t longest_call)
      : shortest(shortest_call), longest(longest_call) {
    const llvm::Triple triple(triple_name);
    std::string error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple.str(), error);
    if (target == nullptr) return;
    regs.reset(target->createMCRegInfo(triple.str()));
    asm_info.reset(target->createMCAsmInfo(*regs, triple.str(), llvm::MCTargetOptions()));
    subtarget.reset(target->createMCSubtargetInfo(triple.str(), "", features));
    instrs.reset(target->createMCInstrInfo());
    context =
        std::make_unique<llvm::MCContext>(triple, asm_info.get(), regs.get(), subtarget.get());
    disassembler.reset(target->createMCDisassembler(*subtarget, *context));
    analysis.reset(target->createMCInstrAnalysis(instrs.get()));
  }
};

}  // namespace

struct CallSites::Impl {
  std::string root;  // the recording host's files are under it
  Decoder x86{"x86_64-linux-gnu", "", 2, 15};
  // +pauth: BLRAA and its kin, the calls of code built with branch protection.
  Decoder arm64{"aarch64-linux-gnu", "+pauth,+bti", 4, 4};
  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
  // A binary's functions by file offset: start -> end; empty when it has no symbols to say.
  std::map<std::string, std::map<uint64_t, uint64_t>> functions;

  const llvm::MemoryBuffer* file(const std::string& path) {
    auto& f = files[path];
    if (!f) {
      auto read = llvm::MemoryBuffer::getFile(root + path, false, false);
      if (!read) return nullptr;
      f = std::move(*read);
    }
    return f.get();
  }
  // The decoder for the ELF file's machine (e_machine, little-endian, at byte 18).
  Decoder& decoder(const llvm::MemoryBuffer& f) {
    const auto* b = reinterpret_cast<const uint8_t*>(f.getBufferStart());
    const bool arm = f.getBufferSize() > 19 && (b[18] | (b[19] << 8)) == llvm::ELF::EM_AARCH64;
    return arm ? arm64 : x86;
  }
  // The call instruction whose last byte is just before `offset`, and its length.
  std::optional<std::pair<llvm::MCInst, uint64_t>> call_ending_at(const std::string& path,
                                                                  uint64_t offset) {
    const llvm::MemoryBuffer* f = file(path);
    if (f == nullptr || offset > f->getBufferSize()) return std::nullopt;
    Decoder& d = decoder(*f);
    if (d.disassembler == nullptr) return std::nullopt;
    const auto* bytes = reinterpret_cast<const uint8_t*>(f->getBufferStart());
    // One that decodes to exactly the return address is it.
    for (uint64_t length = d.shortest; length <= d.longest && length <= offset; ++length) {
      llvm::MCInst inst;
      uint64_t size = 0;
      const llvm::ArrayRef<uint8_t> code(bytes + offset - length, length);
      if (d.disassembler->getInstruction(inst, size, code, offset - length, llvm::nulls()) ==
              llvm::MCDisassembler::Success &&
          size == length && d.instrs->get(inst.getOpcode()).isCall()) {
        return std::make_pair(inst, length);
      }
    }
    return std::nullopt;
  }
  const std::map<uint64_t, uint64_t>& functions_of(const std::string& path) {
    auto [it, added] = functions.try_emplace(path);
    if (!added) return it->second;
    const llvm::MemoryBuffer* f = file(path);
    if (f == nullptr) return it->second;
    auto obj = llvm::object::ObjectFile::createObjectFile(f->getMemBufferRef());
    if (!obj) {
      llvm::consumeError(obj.takeError());
      return it->second;
    }
    auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj->get());
    if (elf == nullptr) return it->second;
    auto headers = elf->getELFFile().program_headers();
    if (!headers) {
      llvm::consumeError(headers.takeError());
      return it->second;
    }
    auto offset_of = [&](uint64_t vaddr) -> std::optional<uint64_t> {
      for (const auto& ph : *headers) {
        if (ph.p_type == llvm::ELF::PT_LOAD && vaddr >= ph.p_vaddr &&
            vaddr < ph.p_vaddr + ph.p_filesz) {
          return vaddr - ph.p_vaddr + ph.p_offset;
        }
      }
      return std::nullopt;
    };
    auto add = [&](const auto& symbols) {
      for (const llvm::object::ELFSymbolRef sym : symbols) {
        auto type = sym.getType();
        auto value = sym.getValue();
        if (!type || !value || *type != llvm::object::SymbolRef::ST_Function ||
            sym.getSize() == 0) {
          if (!type) llvm::consumeError(type.takeError());
          if (!value) llvm::consumeError(value.takeError());
          continue;
        }
        if (auto at = offset_of(*value)) it->second.emplace(*at, *at + sym.getSize());
      }
    };
    add(elf->symbols());
    add(elf->getDynamicSymbolIterators());
    return it->second;
  }
};

CallSites::CallSites(std::string root) {
  // The targets register before the decoders are made.
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86Disassembler();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64Disassembler();
  impl_ = std::make_unique<Impl>();
  impl_->root = std::move(root);
}

CallSites::~CallSites() = default;

bool CallSites::ends_call(const std::string& path, uint64_t offset) {
  auto [seen, added] = seen_.try_emplace({path, offset}, false);
  if (added) seen->second = impl_->call_ending_at(path, offset).has_value();
  return seen->second;
}

std::string CallSites::wrong_target(const std::string& caller, uint64_t ret,
                                    const std::string& callee, uint64_t callee_at) {
  const llvm::MemoryBuffer* f = impl_->file(caller);
  if (caller != callee || f == nullptr) return "";
  Decoder& d = impl_->decoder(*f);
  if (d.analysis == nullptr) return "";
  const auto call = impl_->call_ending_at(caller, ret);
  uint64_t target = 0;
  if (!call || !d.analysis->evaluateBranch(call->first, ret - call->second, call->second, target)) {
    return "";  // indirect
  }
  const auto& functions = impl_->functions_of(caller);
  auto in = functions.upper_bound(callee_at);
  if (functions.empty() || in == functions.begin()) return "";
  --in;
  if (callee_at >= in->second) return "";  // no symbol covers the callee
  ++targets_judged_;
  if (target == in->first) return "";
  // Tail calls: the called function jumps to another, which may jump on. Where a jump's target is
  // not to be known from the binary (an indirect one, into the PLT), nothing is judged.
  const auto* bytes = reinterpret_cast<const uint8_t*>(f->getBufferStart());
  std::set<uint64_t> reached = {target};
  std::vector<uint64_t> todo = {target};
  while (!todo.empty()) {
    const uint64_t start = todo.back();
    todo.pop_back();
    auto fn = functions.find(start);
    if (fn == functions.end()) return "";
    for (uint64_t at = fn->first; at < fn->second && at < f->getBufferSize();) {
      llvm::MCInst inst;
      uint64_t size = 0;
      const llvm::ArrayRef<uint8_t> code(bytes + at,
                                         std::min<uint64_t>(15, f->getBufferSize() - at));
      if (d.disassembler->getInstruction(inst, size, code, at, llvm::nulls()) !=
              llvm::MCDisassembler::Success ||
          size == 0) {
        at += 1;
        continue;
      }
      const llvm::MCInstrDesc& desc = d.instrs->get(inst.getOpcode());
      uint64_t to = 0;
      if (desc.isIndirectBranch()) return "";
      if (desc.isBranch() && d.analysis->evaluateBranch(inst, at, size, to) &&
          (to < fn->first || to >= fn->second)) {
        if (to == in->first) return "";
        if (!functions.contains(to)) return "";
        if (reached.insert(to).second) todo.push_back(to);
      }
      at += size;
    }
  }
  return absl::StrCat("calls 0x", absl::Hex(target), ", not the callee's function at 0x",
                      absl::Hex(in->first));
}

bool CallSites::kernel_frame(const std::string& line) {
  if (line.find("([kernel.kallsyms])") != std::string::npos) return true;
  // A module's frame ([virtio_blk]): perf prints it at its kernel address, in the upper half on
  // x86-64 and aarch64 alike; user frames are printed as file offsets. A garbage return address
  // past the stack copy may be that high too, but its DSO is [unknown].
  const size_t start = line.find_first_not_of(" \t");
  const size_t open = line.rfind(" ([");
  if (start == std::string::npos || open == std::string::npos ||
      !std::isxdigit(static_cast<unsigned char>(line[start])) ||
      line.compare(open, 11, " ([unknown]") == 0) {
    return false;
  }
  return (std::stoull(line.substr(start), nullptr, 16) >> 63) != 0;
}

std::vector<CallSites::Frame> CallSites::user_frames(const std::vector<std::string>& sample) {
  std::vector<Frame> out;
  for (size_t i = 1; i < sample.size(); ++i) {
    const std::string& line = sample[i];
    if (kernel_frame(line)) continue;
    const size_t open = line.rfind(" (");
    const size_t start = line.find_first_not_of(" \t");
    if (open == std::string::npos || start == std::string::npos) continue;
    Frame f;
    f.dso = line.substr(open + 2, line.size() - open - 3);
    f.at = std::stoull(line.substr(start), nullptr, 16);
    f.restore_rt = line.find(" __restore_rt ") != std::string::npos;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::pair<std::string, uint64_t>> CallSites::callers(
    const std::vector<std::string>& sample) {
  std::vector<std::pair<std::string, uint64_t>> out;
  bool first = true, after_signal = false;
  for (size_t i = 1; i < sample.size(); ++i) {
    const std::string& line = sample[i];
    if (kernel_frame(line)) continue;
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
  const std::vector<Frame> frames = user_frames(sample);
  bool interrupted = false;  // the frame above a signal trampoline: the exact pc, no call
  for (size_t i = 1; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    const Frame& callee = frames[i - 1];
    if (callee.restore_rt || interrupted) {
      interrupted = false;
      continue;
    }
    if (f.dso == "[unknown]") {
      // libunwind's last read, a return address of 0 or in no mapping; anywhere else a guess.
      if (i + 1 < frames.size()) out.push_back("[unknown] caller mid-chain");
      continue;
    }
    if (f.dso.starts_with("[")) continue;  // [vdso]: no file to read
    const uint64_t ret = f.at + 1;
    if (!ends_call(f.dso, ret)) {
      if (starts_sigreturn(f.dso, ret)) {
        interrupted = true;
        continue;
      }
      out.push_back(absl::StrCat(f.dso, "+0x", absl::Hex(ret)));
      continue;
    }
    if (!callee.dso.starts_with("[")) {
      if (const std::string why = wrong_target(f.dso, ret, callee.dso, callee.at); !why.empty()) {
        out.push_back(absl::StrCat(f.dso, "+0x", absl::Hex(ret), " ", why));
      }
    }
  }
  return out;
}

}  // namespace pdfix::e2e
