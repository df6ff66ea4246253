#include "profile/naming_dwarf.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "io/huge_pages.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFObject.h"
#include "llvm/DebugInfo/DWARF/DWARFSection.h"
#include "llvm/Object/Decompressor.h"

namespace pdfix::profile {
namespace {

// The sections read, by name: where a unit's DIEs and their strings are, its line table, and the
// ranges that find the unit of an address.
struct Sections {
  llvm::DWARFSection info;
  // DWARF 4's type units, where a file has them: a deque, so that where one section's data goes
  // stays put as the next is added.
  std::deque<llvm::DWARFSection> types;
  llvm::DWARFSection line;
  llvm::DWARFSection str_offsets;
  llvm::DWARFSection addr;
  llvm::DWARFSection ranges;
  llvm::DWARFSection rnglists;
  llvm::StringRef abbrev;
  llvm::StringRef str;
  llvm::StringRef line_str;
  llvm::StringRef aranges;

  // Where the section called `name` goes; nullptr for one naming does not read.
  llvm::StringRef* data_for(llvm::StringRef name) {
    if (name == ".debug_info") return &info.Data;
    if (name == ".debug_types") return &types.emplace_back().Data;
    if (name == ".debug_line") return &line.Data;
    if (name == ".debug_str_offsets") return &str_offsets.Data;
    if (name == ".debug_addr") return &addr.Data;
    if (name == ".debug_ranges") return &ranges.Data;
    if (name == ".debug_rnglists") return &rnglists.Data;
    if (name == ".debug_abbrev") return &abbrev;
    if (name == ".debug_str") return &str;
    if (name == ".debug_line_str") return &line_str;
    if (name == ".debug_aranges") return &aranges;
    return nullptr;
  }
};

// Inflated sections, one block for all.
struct Release {
  size_t bytes;
  void operator()(uint8_t* p) const { io::release_huge(p, bytes); }
};
using Block = std::unique_ptr<uint8_t[], Release>;

class NamingObject : public llvm::DWARFObject {
 public:
  // nullptr when a section does not inflate.
  static std::unique_ptr<NamingObject> read(const llvm::object::ObjectFile& obj);

  llvm::StringRef getFileName() const override { return obj_->getFileName(); }
  const llvm::object::ObjectFile* getFile() const override { return obj_; }
  bool isLittleEndian() const override { return obj_->isLittleEndian(); }
  uint8_t getAddressSize() const override { return obj_->getBytesInAddress(); }
  void forEachInfoSections(llvm::function_ref<void(const llvm::DWARFSection&)> f) const override {
    if (!s_.info.Data.empty()) f(s_.info);
  }
  void forEachTypesSections(llvm::function_ref<void(const llvm::DWARFSection&)> f) const override {
    for (const llvm::DWARFSection& t : s_.types) f(t);
  }
  llvm::StringRef getAbbrevSection() const override { return s_.abbrev; }
  const llvm::DWARFSection& getLineSection() const override { return s_.line; }
  llvm::StringRef getLineStrSection() const override { return s_.line_str; }
  llvm::StringRef getStrSection() const override { return s_.str; }
  const llvm::DWARFSection& getStrOffsetsSection() const override { return s_.str_offsets; }
  const llvm::DWARFSection& getAddrSection() const override { return s_.addr; }
  const llvm::DWARFSection& getRangesSection() const override { return s_.ranges; }
  const llvm::DWARFSection& getRnglistsSection() const override { return s_.rnglists; }
  llvm::StringRef getArangesSection() const override { return s_.aranges; }
  // A linked file's debug sections hold final values: nothing to relocate.
  std::optional<llvm::RelocAddrEntry> find(const llvm::DWARFSection& /*sec*/,
                                           uint64_t /*pos*/) const override {
    return std::nullopt;
  }

 private:
  explicit NamingObject(const llvm::object::ObjectFile& obj) : obj_(&obj) {}
  const llvm::object::ObjectFile* obj_;
  Sections s_;
  Block inflated_{nullptr, Release{0}};
};

// How many times its size a compressed section may inflate to.
constexpr uint64_t kMostInflated = 1032;

std::unique_ptr<NamingObject> NamingObject::read(const llvm::object::ObjectFile& obj) {
  std::unique_ptr<NamingObject> o(new NamingObject(obj));
  struct Compressed {
    llvm::StringRef* to;
    llvm::object::Decompressor d;
  };
  std::vector<Compressed> compressed;
  size_t inflated = 0;
  for (const llvm::object::SectionRef& section : obj.sections()) {
    llvm::Expected<llvm::StringRef> name = section.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    llvm::StringRef* to = o->s_.data_for(*name);
    if (to == nullptr) continue;
    llvm::Expected<llvm::StringRef> data = section.getContents();
    if (!data) {
      llvm::consumeError(data.takeError());
      return nullptr;
    }
    if (!section.isCompressed()) {
      *to = *data;
      continue;
    }
    llvm::Expected<llvm::object::Decompressor> d = llvm::object::Decompressor::create(
        *name, *data, obj.isLittleEndian(), obj.getBytesInAddress() == 8);
    if (!d) {
      llvm::consumeError(d.takeError());
      return nullptr;
    }
    // The size is the file's word: one it cannot hold (zlib inflates 1032 times at most) is
    // left out, the names then the symbol table's, rather than memory taken on its say.
    if (d->getDecompressedSize() > kMostInflated * data->size()) continue;
    inflated += d->getDecompressedSize();
    compressed.push_back({to, *d});
  }
  if (inflated > 0) {
    o->inflated_ = Block(static_cast<uint8_t*>(io::allocate_huge(inflated)), Release{inflated});
  }
  uint8_t* at = o->inflated_.get();
  for (Compressed& c : compressed) {
    const size_t size = c.d.getDecompressedSize();
    if (llvm::Error e = c.d.decompress({at, size})) {
      llvm::consumeError(std::move(e));
      return nullptr;
    }
    *c.to = llvm::StringRef(reinterpret_cast<const char*>(at), size);
    at += size;
  }
  return o;
}

}  // namespace

std::unique_ptr<llvm::DIContext> naming_dwarf(const llvm::object::ObjectFile& obj) {
  if (!obj.isRelocatableObject() && obj.isELF()) {
    if (std::unique_ptr<NamingObject> o = NamingObject::read(obj)) {
      return std::make_unique<llvm::DWARFContext>(std::move(o));
    }
  }
  return llvm::DWARFContext::create(obj, llvm::DWARFContext::ProcessDebugRelocations::Process);
}

}  // namespace pdfix::profile
