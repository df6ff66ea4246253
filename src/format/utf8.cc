#include "format/utf8.h"

#include "absl/strings/str_format.h"
#include "llvm/Support/ConvertUTF.h"

namespace pdfix::format {

std::string escape_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const llvm::UTF8*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned n = llvm::getNumBytesForUTF8(*p);
    if (n <= static_cast<unsigned>(end - p) && llvm::isLegalUTF8Sequence(p, p + n)) {
      out.append(reinterpret_cast<const char*>(p), n);
      p += n;
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", *p);
      ++p;
    }
  }
  return out;
}

}  // namespace pdfix::format
