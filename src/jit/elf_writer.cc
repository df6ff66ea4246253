#include "jit/elf_writer.h"

#include <array>
#include <memory>

#include "format/arch.h"
#include "format/byte_order.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/ObjectYAML/yaml2obj.h"
#include "llvm/Support/SHA1.h"
#include "llvm/Support/raw_ostream.h"

namespace pdfix::jit {
namespace {

namespace ELF = llvm::ELF;
namespace yaml = llvm::ELFYAML;

constexpr size_t kIdSize = 20;  // SHA-1

// An allocated section at `address`, which is also its place in the file.
template <typename S>
std::unique_ptr<S> section_at(std::string_view name, uint32_t type, uint64_t flags,
                              uint64_t address, uint64_t align) {
  auto s = std::make_unique<S>();
  s->Name = llvm::StringRef(name.data(), name.size());
  s->Type = yaml::ELF_SHT(type);
  s->Flags = yaml::ELF_SHF(flags);
  s->Address = llvm::yaml::Hex64(address);
  s->Offset = llvm::yaml::Hex64(address);
  s->AddressAlign = llvm::yaml::Hex64(align);
  s->OriginalSecNdx = 0;
  return s;
}

llvm::yaml::BinaryRef binary(const std::vector<uint8_t>& bytes) {
  return llvm::yaml::BinaryRef(llvm::ArrayRef<uint8_t>(bytes.data(), bytes.size()));
}

}  // namespace

ElfWriter::ElfWriter(uint32_t machine, bool big_endian) {
  // A machine the table does not know is taken for a 64-bit one.
  const format::ArchFacts* arch = format::arch_of_elf(machine, big_endian);
  const bool is_32_bit = arch != nullptr && arch->pointer_size == 4;
  yaml::FileHeader& h = obj_.Header;
  h.Class = yaml::ELF_ELFCLASS(is_32_bit ? ELF::ELFCLASS32 : ELF::ELFCLASS64);
  h.Data = yaml::ELF_ELFDATA(big_endian ? ELF::ELFDATA2MSB : ELF::ELFDATA2LSB);
  h.OSABI = yaml::ELF_ELFOSABI(ELF::ELFOSABI_NONE);
  h.ABIVersion = llvm::yaml::Hex8(0);
  h.Type = yaml::ELF_ET(ELF::ET_DYN);
  h.Machine = yaml::ELF_EM(machine);
  h.Flags = yaml::ELF_EF(0);
  h.Entry = llvm::yaml::Hex64(0);
  auto note = section_at<yaml::NoteSection>(".note.gnu.build-id", ELF::SHT_NOTE, ELF::SHF_ALLOC,
                                            kNoteOffset, 4);
  note->Notes.emplace();
  note->Notes->push_back(
      {"GNU", binary(keep(std::vector<uint8_t>(kIdSize, 0))), yaml::ELF_NT(ELF::NT_GNU_BUILD_ID)});
  obj_.Chunks.push_back(std::move(note));
  obj_.DWARF.emplace();
  obj_.DWARF->IsLittleEndian = !big_endian;
  obj_.DWARF->Is64BitAddrSize = !is_32_bit;
}

std::string_view ElfWriter::keep(std::string_view text) { return texts_.emplace_back(text); }

const std::vector<uint8_t>& ElfWriter::keep(std::vector<uint8_t> bytes) {
  return contents_.emplace_back(std::move(bytes));
}

void ElfWriter::add_bytes(std::string_view name, uint64_t address, uint64_t align, bool executable,
                          std::vector<uint8_t> bytes) {
  const uint64_t flags = ELF::SHF_ALLOC | (executable ? uint64_t{ELF::SHF_EXECINSTR} : 0);
  auto s =
      section_at<yaml::RawContentSection>(keep(name), ELF::SHT_PROGBITS, flags, address, align);
  s->Content = binary(keep(std::move(bytes)));
  obj_.Chunks.push_back(std::move(s));
}

void ElfWriter::add_nobits_code(std::string_view name, uint64_t address, uint64_t size) {
  auto s = section_at<yaml::NoBitsSection>(keep(name), ELF::SHT_NOBITS,
                                           ELF::SHF_ALLOC | ELF::SHF_EXECINSTR, address, 0);
  s->Size = llvm::yaml::Hex64(size);
  obj_.Chunks.push_back(std::move(s));
}

void ElfWriter::add_segment(const Segment& s) {
  yaml::ProgramHeader p{};
  p.Type = yaml::ELF_PT(s.type);
  p.Flags = yaml::ELF_PF(s.flags);
  p.VAddr = llvm::yaml::Hex64(s.vaddr);
  p.PAddr = llvm::yaml::Hex64(0);
  if (s.offset) p.Offset = llvm::yaml::Hex64(*s.offset);
  if (s.file_size) p.FileSize = llvm::yaml::Hex64(*s.file_size);
  if (s.mem_size) p.MemSize = llvm::yaml::Hex64(*s.mem_size);
  if (s.align) p.Align = llvm::yaml::Hex64(*s.align);
  const std::string_view first = keep(s.first);
  const std::string_view last = keep(s.last);
  p.FirstSec = llvm::StringRef(first.data(), first.size());
  p.LastSec = llvm::StringRef(last.data(), last.size());
  obj_.ProgramHeaders.push_back(std::move(p));
}

void ElfWriter::add_function(std::string_view name, std::string_view section, uint64_t value,
                             uint64_t size) {
  yaml::Symbol sym{};
  sym.Type = yaml::ELF_STT(ELF::STT_FUNC);
  sym.Binding = yaml::ELF_STB(ELF::STB_LOCAL);
  const std::string_view in = keep(section);
  sym.Section = llvm::StringRef(in.data(), in.size());
  sym.Value = llvm::yaml::Hex64(value);
  sym.Size = llvm::yaml::Hex64(size);
  sym.StName = static_cast<uint32_t>(strtab_.size());
  strtab_.append(name);
  strtab_ += '\0';
  symbols_.push_back(sym);
}

llvm::DWARFYAML::Data& ElfWriter::dwarf() { return *obj_.DWARF; }

absl::StatusOr<ElfImage> ElfWriter::write() {
  // The symbol names as one string table, which the emitter takes as the section's content.
  auto strtab = std::make_unique<yaml::RawContentSection>();
  strtab->Name = ".strtab";
  strtab->Type = yaml::ELF_SHT(ELF::SHT_STRTAB);
  strtab->AddressAlign = llvm::yaml::Hex64(1);
  strtab->OriginalSecNdx = 0;
  strtab->Content = binary(keep(std::vector<uint8_t>(strtab_.begin(), strtab_.end())));
  obj_.Chunks.push_back(std::move(strtab));
  obj_.Symbols = symbols_;
  // After the loadable segments, as a linker orders them.
  add_segment({.type = ELF::PT_NOTE,
               .flags = ELF::PF_R,
               .vaddr = kNoteOffset,
               .first = ".note.gnu.build-id",
               .last = ".note.gnu.build-id"});
  if (obj_.DWARF->isEmpty()) obj_.DWARF.reset();

  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  std::string errors;
  const bool ok = llvm::yaml::yaml2elf(
      obj_, os,
      [&errors](const llvm::Twine& message) {
        errors += (errors.empty() ? "" : "; ") + message.str();
      },
      UINT64_MAX);
  if (!ok) return absl::InternalError("writing the JIT code's ELF file: " + errors);
  ElfImage image{.bytes = std::vector<uint8_t>(out.begin(), out.end())};
  // The note: namesz, descsz, type, "GNU\0", then the id.
  constexpr uint64_t kDescAt = kNoteOffset + 16;
  const format::Endian e = format::Endian::of(
      static_cast<uint8_t>(obj_.Header.Data) == ELF::ELFDATA2MSB ? std::endian::big
                                                                 : std::endian::little);
  if (image.bytes.size() < kDescAt + kIdSize || e.u32(image.bytes.data() + kNoteOffset) != 4 ||
      e.u32(image.bytes.data() + kNoteOffset + 4) != kIdSize) {
    return absl::InternalError("the JIT code's ELF file has no build-id note where it was put");
  }
  llvm::SHA1 hash;
  hash.update(llvm::ArrayRef<uint8_t>(image.bytes.data(), image.bytes.size()));
  const std::array<uint8_t, kIdSize> digest = hash.final();
  std::copy(digest.begin(), digest.end(), image.bytes.begin() + kDescAt);
  image.id = *format::BuildId::from_bytes(digest);
  return image;
}

}  // namespace pdfix::jit
