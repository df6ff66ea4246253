#include "format/build_id.h"

#include <algorithm>

#include "absl/strings/escaping.h"

namespace pdfix::format {

std::string BuildId::hex() const {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes.data()), size));
}

std::optional<BuildId> BuildId::from_bytes(std::span<const uint8_t> b) {
  if (b.empty() || b.size() > 20) return std::nullopt;
  BuildId id;
  std::copy(b.begin(), b.end(), id.bytes.begin());
  id.size = static_cast<uint8_t>(b.size());
  return id;
}

std::optional<BuildId> BuildId::from_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0 || hex.size() > 40) return std::nullopt;
  if (!std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(c); })) {
    return std::nullopt;
  }
  std::string raw = absl::HexStringToBytes(absl::string_view(hex.data(), hex.size()));
  return from_bytes({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()});
}

}  // namespace pdfix::format
