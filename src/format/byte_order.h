// The one place where perf.data byte order is handled. Every multi-byte field read from or written
// to a perf.data goes through Endian, so a big-endian recording on a little-endian host (or the
// reverse) is read and written in the file's own order.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace pdfix::format {

class Endian {
 public:
  static Endian host() { return Endian(false); }
  static Endian swapped() { return Endian(true); }
  // The order of a file that was written on a host of the given endianness.
  static Endian of(std::endian file_order) { return Endian(file_order != std::endian::native); }

  bool is_swapped() const { return swap_; }
  bool is_big() const { return (std::endian::native == std::endian::big) != swap_; }

  uint16_t u16(const uint8_t* p) const { return fix(load<uint16_t>(p)); }
  uint32_t u32(const uint8_t* p) const { return fix(load<uint32_t>(p)); }
  uint64_t u64(const uint8_t* p) const { return fix(load<uint64_t>(p)); }
  int32_t s32(const uint8_t* p) const { return static_cast<int32_t>(u32(p)); }

  void put_u16(uint8_t* p, uint16_t v) const { store(p, fix(v)); }
  void put_u32(uint8_t* p, uint32_t v) const { store(p, fix(v)); }
  void put_u64(uint8_t* p, uint64_t v) const { store(p, fix(v)); }

  // perf_event_attr's flag bits are C bitfields in a u64. Compilers for big-endian targets allocate
  // bitfields from the most significant bit, so on a foreign-order file the bit order within the
  // word is reversed too, not just the bytes. Returns the flags with bit 0 = `disabled`.
  uint64_t attr_flags(const uint8_t* p) const {
    uint64_t v = u64(p);
    return is_big() ? reverse_bits(v) : v;
  }
  void put_attr_flags(uint8_t* p, uint64_t flags) const {
    put_u64(p, is_big() ? reverse_bits(flags) : flags);
  }

 private:
  explicit Endian(bool swap) : swap_(swap) {}

  template <typename T>
  static T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  template <typename T>
  static void store(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof v);
  }
  template <typename T>
  T fix(T v) const {
    return swap_ ? byteswap(v) : v;
  }
  template <typename T>
  static T byteswap(T v) {
    if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(v));
    if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(v));
    if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(v));
  }
  static uint64_t reverse_bits(uint64_t v) {
    uint64_t r = 0;
    for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1U) << (63 - i);
    return r;
  }

  bool swap_;
};

}  // namespace pdfix::format
