// A build-id: up to 20 bytes (SHA-1 ids are 20, MD5/UUID ones 16, some linkers 8).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pdfix::format {

struct BuildId {
  std::array<uint8_t, 20> bytes{};
  uint8_t size = 0;

  std::span<const uint8_t> view() const { return {bytes.data(), size}; }
  std::string hex() const;
  static std::optional<BuildId> from_bytes(std::span<const uint8_t> b);
  // Accepts 2..40 hex digits (an even number).
  static std::optional<BuildId> from_hex(std::string_view hex);
  friend bool operator==(const BuildId& a, const BuildId& b) {
    return a.size == b.size &&
           std::equal(a.bytes.begin(), a.bytes.begin() + a.size, b.bytes.begin());
  }
};

}  // namespace pdfix::format
