// Kernel frames' names: the kallsyms text of the recording's kernel (the running kernel's, when it
// has the recording's build-id, else a build-id cache's copy), relocated by the difference of the
// recorded kernel map's reference symbol (_text, or _stext on arm64) and the text's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/huge_pages.h"

namespace pdfix::profile {

class Kallsyms {
 public:
  // `text` as /proc/kallsyms lays it out: read apart from the recording (beside it, for this
  // host's), and placed when the recording's kernel map is known. Names nothing before.
  // The text is kept: the names are views of it (a kernel's 120 thousand names are not as many
  // strings).
  explicit Kallsyms(std::string text);
  Kallsyms(std::string text, std::string_view ref, uint64_t ref_at) : Kallsyms(std::move(text)) {
    place(ref, ref_at);
  }
  Kallsyms(const Kallsyms&) = delete;
  Kallsyms& operator=(const Kallsyms&) = delete;
  // `ref` the reference symbol the recording's kernel map names (perf's _text or _stext, both
  // functions in kallsyms) and `ref_at` its recorded address (the map's pgoff). Without `ref` in
  // the text, nothing says where the text's kernel lay against the recording's: no names rather
  // than shifted ones.
  void place(std::string_view ref, uint64_t ref_at);
  // The function at a recorded kernel address; nullopt below the first symbol or where the
  // text has none.
  std::optional<std::string> function_at(uint64_t address) const;
  bool empty() const { return symbols_.empty(); }
  // Whether the text is of another boot than the recording's (its kernel moved): the core
  // kernel's symbols are shifted back, but modules are placed apart at each boot and their
  // symbols here name nothing of the recording's.
  bool relocated() const { return shift_ != 0; }

 private:
  // Sixteen bytes, in huge pages: a kernel's hundred thousand, written once each, are pages to
  // fault in. Where its name lies in text_ orders aliases as the text lists them.
  struct Symbol {
    uint64_t address;
    uint32_t name_at;
    uint32_t name_size;
    bool operator<(const Symbol& o) const {
      return address != o.address ? address < o.address : name_at < o.name_at;
    }
  };
  std::string_view name_of(const Symbol& s) const {
    return {text_.data() + s.name_at, s.name_size};
  }
  std::string text_;
  std::vector<Symbol, io::HugePageAllocator<Symbol>> symbols_;  // text symbols, by address
  bool placed_ = false;
  uint64_t shift_ = 0;  // recorded address minus the text's
};

}  // namespace pdfix::profile
