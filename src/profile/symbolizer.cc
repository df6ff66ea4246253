#include "profile/symbolizer.h"

#include <fstream>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "format/build_id.h"
#include "llvm/DebugInfo/Symbolize/SymbolizableObjectFile.h"
#include "llvm/Object/Binary.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "profile/demangle.h"
#include "profile/naming_dwarf.h"
#include "profile/plt.h"
#include "resolve/debug_file.h"

namespace pdfix::profile {
namespace {

// A PT_LOAD segment: where its file bytes land in the binary's address space.
struct Segment {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t vaddr = 0;
};

template <typename ELFT>
std::vector<Segment> loads_of(const llvm::object::ELFObjectFile<ELFT>& elf) {
  std::vector<Segment> out;
  auto headers = elf.getELFFile().program_headers();
  if (!headers) {
    llvm::consumeError(headers.takeError());
    return out;
  }
  for (const auto& ph : *headers) {
    if (ph.p_type != llvm::ELF::PT_LOAD) continue;
    // A segment with no file bytes (the symbol-only ELF files inject-jit makes of JIT code)
    // places its offsets by its size in memory: the maps name offsets into it all the same.
    out.push_back({ph.p_offset, ph.p_filesz != 0 ? ph.p_filesz : ph.p_memsz, ph.p_vaddr});
  }
  return out;
}

std::vector<Segment> loads_of(const llvm::object::ObjectFile* obj, const std::string& path,
                              std::string& problem) {
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj)) return loads_of(*e);
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF64BEObjectFile>(obj)) return loads_of(*e);
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(obj)) return loads_of(*e);
  if (const auto* e = llvm::dyn_cast<llvm::object::ELF32BEObjectFile>(obj)) return loads_of(*e);
  problem = absl::StrCat(path, ": not an ELF file");
  return {};
}

// The load segments of the binary at `path`, and its PLT stubs (only a binary has them: a debug
// file keeps no code).
std::vector<Segment> loads_of(const std::string& path, std::string& problem, PltStubs& plt) {
  auto file = llvm::object::ObjectFile::createObjectFile(path);
  if (!file) {
    problem = absl::StrCat(path, ": ", llvm::toString(file.takeError()));
    return {};
  }
  plt = PltStubs(*file->getBinary());
  return loads_of(file->getBinary(), path, problem);
}

}  // namespace

struct Symbolizer::Binary {
  std::string file;  // the binary
  std::string path;  // what the symbolizer reads: the debug file, else the binary
  // Or, with no file, the image in this process's memory (the running kernel's vdso), under a
  // name of its own: the object keeps referring to it.
  std::string image_name;
  std::unique_ptr<llvm::object::ObjectFile> image;
  // What LLVM's symbolizer reads, once asked: `path`'s object (or the image), its symbols and its
  // DWARF (profile/naming_dwarf.h).
  bool read = false;
  llvm::object::OwningBinary<llvm::object::Binary> owned;
  std::unique_ptr<llvm::symbolize::SymbolizableModule> module;
  std::vector<Segment> loads;
  PltStubs plt;
  std::string problem;
  std::optional<resolve::FileStamp> file_stamp;
  std::optional<resolve::FileStamp> path_stamp;
};

Symbolizer::Symbolizer(const resolve::Host& host, resolve::CopyPlaces places)
    : host_(&host), places_(std::move(places)) {}

void Symbolizer::next_recording(const resolve::Host& host, resolve::CopyPlaces places) {
  host_ = &host;
  places_ = std::move(places);
  kallsyms_.reset();
  kernel_problem_.clear();
  host_kallsyms_ = {};
  for (auto it = binaries_.begin(); it != binaries_.end();) {
    const Binary& b = *it->second;
    // This process's vdso lives as long as the process.
    const bool kept =
        b.image != nullptr || (!b.file.empty() && resolve::stamp_of(b.file) == b.file_stamp &&
                               resolve::stamp_of(b.path) == b.path_stamp);
    if (kept) {
      ++it;
      continue;
    }
    binaries_.erase(it++);
  }
}

Symbolizer::~Symbolizer() = default;

Symbolizer::Binary& Symbolizer::binary_of(const Mapping& m) {
  auto [it, added] = binaries_.try_emplace(key(m));
  if (!added) return *it->second;
  it->second = std::make_unique<Binary>();
  Binary& b = *it->second;
  const std::optional<format::BuildId> id = format::BuildId::from_hex(m.build_id);
  if (!id && !m.proven_file.empty()) {
    // No build-id of its own (Go), and proven by its inode: the file itself.
    b.loads = loads_of(m.proven_file, b.problem, b.plt);
    if (!b.loads.empty()) b.path = b.file = m.proven_file;
    b.file_stamp = b.path_stamp = resolve::stamp_of(b.file);
    return b;
  }
  if (!id) {
    b.problem = "no build-id proven: its file is not taken on its path's word";
    return b;
  }
  if (resolve::entry_kind_of(m.file) == resolve::EntryKind::kVdso) return vdso_of(*id, b);
  auto found = resolve::find_copy(*host_, {.name = m.file, .id = *id, .pids = {m.pid}}, places_);
  if (!found) {
    b.problem = absl::StrCat("no file with build-id ", m.build_id, " here");
    return b;
  }
  // The load segments are the binary's; its debug file (same layout, full DWARF and symbols)
  // names better where it is here.
  b.loads = loads_of(found->path, b.problem, b.plt);
  if (b.loads.empty()) {
    if (b.problem.empty()) b.problem = absl::StrCat(found->path, ": no loadable segment");
    return b;
  }
  b.path = b.file = found->path;
  if (auto debug = resolve::find_debug_file(*id, m.file, found->path, places_)) {
    b.path = debug->path;
  }
  b.file_stamp = resolve::stamp_of(b.file);
  b.path_stamp = resolve::stamp_of(b.path);
  return b;
}

// The vdso with build-id `id`: a cache's copy, or this process's when the kernel that maps it is
// the recording's (resolve::copy_of's rule for a bundle's vdso).
Symbolizer::Binary& Symbolizer::vdso_of(const format::BuildId& id, Binary& b) {
  const resolve::Copy c = resolve::copy_of(
      *host_, {.name = "[vdso]", .id = id, .kind = resolve::EntryKind::kVdso}, places_);
  if (c.from == resolve::Copy::From::kFile) {
    b.loads = loads_of(c.path, b.problem, b.plt);
    if (!b.loads.empty()) b.path = b.file = c.path;
    b.file_stamp = b.path_stamp = resolve::stamp_of(b.file);
  } else if (c.from == resolve::Copy::From::kVdso) {
    const std::span<const uint8_t> bytes = resolve::vdso_with_id(*host_, id);
    b.image_name = absl::StrCat("[vdso] ", id.hex());
    auto image = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(
        llvm::StringRef(reinterpret_cast<const char*>(bytes.data()), bytes.size()), b.image_name));
    if (!image) {
      b.problem = absl::StrCat("this process's vdso: ", llvm::toString(image.takeError()));
      return b;
    }
    b.image = std::move(*image);
    b.loads = loads_of(b.image.get(), "this process's vdso", b.problem);
  } else {
    b.problem = c.missing;
  }
  return b;
}

void Symbolizer::read_host_kallsyms_ahead() {
  // Read and parsed: a kernel's hundred thousand functions sorted while the recording is read.
  host_kallsyms_ = std::async(
      std::launch::async, [host = host_] { return std::make_unique<Kallsyms>(host->kallsyms()); });
}

void Symbolizer::end_recording() {
  // The last future of std::async's waits for its thread when it lets go.
  host_kallsyms_ = {};
}

void Symbolizer::set_kernel(const Mapping& image) {
  const std::optional<format::BuildId> id = format::BuildId::from_hex(image.build_id);
  if (!id) {
    kernel_problem_ = "the kernel's map has no build-id";
    return;
  }
  const resolve::Copy c = resolve::copy_of(
      *host_, {.name = image.file, .id = *id, .kind = resolve::EntryKind::kKallsyms}, places_);
  if (c.from == resolve::Copy::From::kKallsyms) {
    kallsyms_ = host_kallsyms_.valid() ? host_kallsyms_.get()
                                       : std::make_unique<Kallsyms>(host_->kallsyms());
  } else if (c.from == resolve::Copy::From::kFile) {
    std::ifstream f(c.path, std::ios::binary);
    kallsyms_ = std::make_unique<Kallsyms>(
        std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()));
  } else {
    kernel_problem_ = c.missing;
    return;
  }
  // perf names the kernel's map after its reference symbol: [kernel.kallsyms]_text.
  const size_t bracket = image.file.find(']');
  const std::string ref = bracket == std::string::npos ? "_text" : image.file.substr(bracket + 1);
  kallsyms_->place(ref.empty() ? "_text" : ref, image.offset);
  if (kallsyms_->empty()) kernel_problem_ = "its kallsyms does not show where " + ref + " lay";
}

std::vector<Line> Symbolizer::lines(const Mapping& m, uint64_t address, bool caller) {
  std::vector<Line> out;
  if (m.kernel) {
    if (kallsyms_ == nullptr) return out;
    if (kallsyms_->relocated() && !m.file.starts_with("[kernel.kallsyms]")) return out;
    if (auto name = kallsyms_->function_at(caller ? address - 1 : address)) {
      out.push_back({.function = *name, .system_name = *name});
    }
    return out;
  }
  Binary* b = binary_to_name(m);
  return b == nullptr ? out : lines_in(*b, m.start, m.offset, address, caller);
}

Symbolizer::Binary* Symbolizer::binary_to_name(const Mapping& m) {
  if (m.kernel) return nullptr;
  Binary& b = binary_of(m);
  return (b.path.empty() && b.image == nullptr) || b.loads.empty() ? nullptr : &b;
}

std::vector<Line> Symbolizer::lines_in(Binary& b, uint64_t start, uint64_t offset, uint64_t address,
                                       bool caller) {
  std::vector<Line> out;
  const uint64_t at = caller && address > start ? address - 1 : address;
  const uint64_t in_file = at - start + offset;
  std::optional<uint64_t> vaddr;
  for (const Segment& s : b.loads) {
    if (in_file >= s.offset && in_file < s.offset + s.size) vaddr = in_file - s.offset + s.vaddr;
  }
  if (!vaddr) return out;
  // A PLT stub's name first: the symbolizer gives it none, or the symbol before the PLT's.
  if (auto stub = b.plt.name_at(*vaddr)) {
    out.push_back({.function = *stub, .system_name = *stub});
    return out;
  }
  if (!b.read) {
    b.read = true;
    read_module(b);
  }
  if (b.module == nullptr) return out;
  const llvm::object::SectionedAddress where{*vaddr, llvm::object::SectionedAddress::UndefSection};
  // Names as the binary spells them (profile/demangle.h: the name shown, and the mangled one
  // kept), files by their whole paths, and the symbol table where DWARF has no function.
  const llvm::DIInliningInfo info = b.module->symbolizeInlinedCode(
      where,
      llvm::DILineInfoSpecifier(llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath,
                                llvm::DILineInfoSpecifier::FunctionNameKind::LinkageName),
      /*UseSymbolTable=*/true);
  for (uint32_t i = 0; i < info.getNumberOfFrames(); ++i) {
    const llvm::DILineInfo& f = info.getFrame(i);
    if (f.FunctionName == llvm::DILineInfo::BadString) continue;
    out.push_back({.function = function_name(f.FunctionName),
                   .system_name = f.FunctionName,
                   .file = f.FileName == llvm::DILineInfo::BadString ? "" : f.FileName,
                   .line = f.Line,
                   .column = f.Column});
  }
  return out;
}

void Symbolizer::read_module(Binary& b) {
  const llvm::object::ObjectFile* obj = b.image.get();
  if (obj == nullptr) {
    auto owned = llvm::object::createBinary(b.path);
    if (!owned) {
      b.problem = llvm::toString(owned.takeError());
      return;
    }
    b.owned = std::move(*owned);
    obj = llvm::dyn_cast<llvm::object::ObjectFile>(b.owned.getBinary());
    if (obj == nullptr) {
      b.problem = absl::StrCat(b.path, ": not an object file");
      return;
    }
  }
  auto module = llvm::symbolize::SymbolizableObjectFile::create(obj, naming_dwarf(*obj),
                                                                /*UntagAddresses=*/false);
  if (!module) {
    b.problem = llvm::toString(module.takeError());
    return;
  }
  b.module = std::move(*module);
}

std::string Symbolizer::binary_file(const Mapping& m) {
  return m.kernel ? std::string() : binary_of(m).file;
}

std::string Symbolizer::problem(const Mapping& m) const {
  if (m.kernel && kallsyms_ != nullptr && kallsyms_->relocated() &&
      !m.file.starts_with("[kernel.kallsyms]")) {
    return "a module of another boot than this kallsyms's: modules move at each boot";
  }
  if (m.kernel) return kernel_problem_;
  auto it = binaries_.find(key(m));
  return it == binaries_.end() ? "" : it->second->problem;
}

}  // namespace pdfix::profile
