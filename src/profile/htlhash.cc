#include "profile/htlhash.h"

#include <algorithm>
#include <array>
#include <fstream>

#include "absl/strings/escaping.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SHA256.h"

namespace pdfix::profile {

std::optional<std::string> htlhash_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return std::nullopt;
  const std::streamoff size = f.tellg();
  if (size < 0) return std::nullopt;
  constexpr std::streamoff kPart = 4096;
  std::array<char, kPart> buffer{};
  llvm::SHA256 hash;
  const auto update = [&](std::streamoff from, std::streamoff length) {
    f.seekg(from);
    f.read(buffer.data(), length);
    if (f.gcount() != length) return false;
    hash.update(llvm::StringRef(buffer.data(), static_cast<size_t>(length)));
    return true;
  };
  const std::streamoff part = std::min(size, kPart);
  if (!update(0, part) || !update(size - part, part)) return std::nullopt;
  std::array<uint8_t, 8> length{};
  for (size_t i = 0; i < length.size(); ++i) {
    length[i] = static_cast<uint8_t>(static_cast<uint64_t>(size) >> (8 * (7 - i)));
  }
  hash.update(llvm::ArrayRef<uint8_t>(length));
  const std::array<uint8_t, 32> digest = hash.final();
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), 16));
}

}  // namespace pdfix::profile
