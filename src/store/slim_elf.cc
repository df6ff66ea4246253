#include "store/slim_elf.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/BinaryFormat/ELF.h"
#include "resolve/elf_type.h"

namespace pdfix::store {
namespace {

namespace elf = llvm::ELF;

// Read for names: perf's @plt entries (the PLT's layout, its relocations, the .plt.got's jumps)
// and Go's function table, which Go's tools and some profilers name functions from when .symtab
// is stripped.
constexpr std::array<std::string_view, 10> kKeptByName = {
    ".gopclntab", ".go.buildinfo", ".gosymtab", ".plt",     ".plt.sec",
    ".plt.got",   ".plt.bnd",      ".rela.plt", ".rel.plt", ".dynstr"};

// Read to unwind: by name, as their types are processor-specific numbers other processors reuse.
constexpr std::array<std::string_view, 5> kUnwindTables = {
    ".eh_frame", ".eh_frame_hdr", ".debug_frame", ".ARM.exidx", ".ARM.extab"};

// Read by debuggers only: where variables live, and macros. Names, source lines and inline
// frames come from .debug_info, .debug_line and the tables they point into.
constexpr std::array<std::string_view, 4> kDebuggerOnly = {".debug_loc", ".debug_loclists",
                                                           ".debug_macro", ".debug_macinfo"};

template <size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A range of the original file that the copy keeps.
struct Range {
  uint64_t offset;
  uint64_t size;
};

absl::Status outside(const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("not a whole ELF file: ", what, " lies outside it"));
}

template <class ELFT>
absl::StatusOr<std::unique_ptr<SlimElf>> slim(std::span<const uint8_t> file,
                                              const SlimOptions& options) {
  auto parsed = llvm::object::ELFFile<ELFT>::create(
      llvm::StringRef(reinterpret_cast<const char*>(file.data()), file.size()));
  if (!parsed) {
    return absl::InvalidArgumentError("not ELF: " + llvm::toString(parsed.takeError()));
  }
  const auto& obj = *parsed;
  auto sections = obj.sections();
  if (!sections) {
    return absl::InvalidArgumentError("not ELF: " + llvm::toString(sections.takeError()));
  }
  // Without section headers nothing tells a reader's tables from code: the file is kept whole.
  if (sections->empty()) return absl::InvalidArgumentError("no section headers");
  const auto& header = obj.getHeader();
  std::vector<Range> ranges = {{0, header.e_ehsize}};
  if (header.e_phnum > 0) {
    ranges.push_back({header.e_phoff, uint64_t{header.e_phnum} * header.e_phentsize});
  }
  using Shdr = typename ELFT::Shdr;
  auto slim = std::make_unique<SlimElf>();
  const uint64_t table_offset = header.e_shoff;
  const uint64_t table_size = sections->size() * sizeof(Shdr);
  slim->section_headers.resize(table_size);
  if (table_size > 0) std::memcpy(slim->section_headers.data(), sections->data(), table_size);
  // The copy's table: LLVM's types hold each field in the file's byte order.
  auto* table = reinterpret_cast<Shdr*>(slim->section_headers.data());

  bool plt_got = false;
  std::vector<uint32_t> dynsym_names;
  for (const Shdr& sec : *sections) {
    if (sec.sh_type == elf::SHT_DYNSYM) dynsym_names.push_back(sec.sh_link);
    auto name = obj.getSectionName(sec);
    if (name && *name == ".plt.got") plt_got = true;
    if (!name) llvm::consumeError(name.takeError());
  }
  for (size_t i = 1; i < sections->size(); ++i) {
    const Shdr& sec = (*sections)[i];
    if (sec.sh_type == elf::SHT_NOBITS || sec.sh_type == elf::SHT_NULL) continue;
    auto name = obj.getSectionName(sec);
    if (!name) return absl::InvalidArgumentError("not ELF: " + llvm::toString(name.takeError()));
    const SectionFacts facts{
        std::string_view(name->data(), name->size()), sec.sh_type, sec.sh_flags,
        std::find(dynsym_names.begin(), dynsym_names.end(), i) != dynsym_names.end(), plt_got};
    if (slim_keeps(facts, options)) {
      if (sec.sh_offset > file.size() || sec.sh_size > file.size() - sec.sh_offset) {
        return outside(absl::StrCat("section ", std::string(facts.name)));
      }
      ranges.push_back({sec.sh_offset, sec.sh_size});
    } else {
      table[i].sh_type = elf::SHT_NOBITS;
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.offset < b.offset; });
  std::vector<Range> merged;
  for (const Range& r : ranges) {
    if (r.size == 0) continue;
    if (r.offset > file.size() || r.size > file.size() - r.offset) return outside("a header");
    if (!merged.empty() && r.offset <= merged.back().offset + merged.back().size) {
      merged.back().size = std::max(merged.back().size, r.offset + r.size - merged.back().offset);
    } else {
      merged.push_back(r);
    }
  }
  if (table_offset > file.size() || table_size > file.size() - table_offset) {
    return outside("the section header table");
  }
  for (const Range& r : merged) {
    if (table_size > 0 && r.offset < table_offset + table_size &&
        table_offset < r.offset + r.size) {
      return outside("a section kept over the section header table, or the table");
    }
  }
  for (const Range& r : merged) {
    slim->image.pieces.push_back({r.offset, file.subspan(r.offset, r.size)});
  }
  if (table_size > 0) slim->image.pieces.push_back({table_offset, slim->section_headers});
  std::sort(slim->image.pieces.begin(), slim->image.pieces.end(),
            [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  slim->image.size = file.size();
  for (const Piece& p : slim->image.pieces) slim->kept += p.bytes.size();
  slim->left_out = file.size() - slim->kept;
  return slim;
}

}  // namespace

bool slim_keeps(const SectionFacts& s, const SlimOptions& options) {
  if (among(kUnwindTables, s.name)) return options.unwind_tables;
  if (among(kDebuggerOnly, s.name)) return false;
  if ((s.flags & elf::SHF_ALLOC) == 0) return true;
  switch (s.type) {
    case elf::SHT_NOTE:
    case elf::SHT_DYNSYM:
    case elf::SHT_DYNAMIC:
    case elf::SHT_SYMTAB:
    case elf::SHT_SYMTAB_SHNDX:
      return true;
    default:
      break;
  }
  if (s.names_of_dynsym || among(kKeptByName, s.name)) return true;
  return s.plt_got && (s.name == ".rela.dyn" || s.name == ".rel.dyn");
}

absl::StatusOr<std::unique_ptr<SlimElf>> slim_elf(std::span<const uint8_t> file,
                                                  const SlimOptions& options) {
  if (!resolve::is_elf(file)) return absl::InvalidArgumentError("not ELF: not an ELF file");
  return resolve::with_elf_type(file, [&]<class ELFT>() { return slim<ELFT>(file, options); });
}

}  // namespace pdfix::store
