// Stores into memory that another core reads next. A buffer one thread fills and another reads
// goes back and forth between their caches: each line the filling thread writes again must first
// be taken back from the core that read it (a transfer between cores, some 50 ns on this project's
// VMs). Non-temporal stores write whole lines to memory without taking them first, and the
// reader's sequential loads are prefetched from there. x86-64's MOVNTI; elsewhere plain stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pdfix::io {

// `words` 8-byte words from `from` to `to`, past this core's cache.
inline void stream_words(uint64_t* to, const uint64_t* from, size_t words) {
#if defined(__x86_64__)
  for (size_t i = 0; i < words; ++i) {
    _mm_stream_si64(reinterpret_cast<long long*>(to + i), static_cast<long long>(from[i]));
  }
#else
  if (words != 0) std::memcpy(to, from, words * sizeof(uint64_t));
#endif
}

// Every stream_words() before it visible to another thread before any store after it (the
// release of the lock that hands the memory over): non-temporal stores are not ordered with the
// rest.
inline void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace pdfix::io
