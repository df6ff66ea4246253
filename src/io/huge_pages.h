// Memory for tables that grow to megabytes (export's stacks, their hash index): allocations of
// 2 MiB and more are mapped at a 2 MiB boundary and advised for transparent huge pages, which a
// kernel in THP's "madvise" mode (Debian's default) gives only to memory that asks. A table of
// 5 MB then takes a few page faults instead of a thousand as it fills, and its random lookups miss
// the TLB less. Smaller allocations are the heap's as usual.
#pragma once

#include <cstddef>
#include <memory>

namespace pdfix::io {

inline constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` of memory (throws std::bad_alloc), and its release; `bytes` must be the same for both.
void* allocate_huge(size_t bytes);
void release_huge(void* p, size_t bytes) noexcept;

// Advises the whole huge pages within [p, p + bytes) (memory the caller holds, not yet written:
// a string reserved for a large read) for transparent huge pages.
void advise_huge(void* p, size_t bytes) noexcept;

// Has the kernel back the whole pages within [p, p + bytes) (memory the caller holds and is about
// to write: a buffer reserved whole) in one call (MADV_POPULATE_WRITE), not a page fault each:
// a fault costs 10-25 us where page tables are shadowed (virtual machines). Advice only: a kernel
// before 5.14 faults them in one by one as before.
void prefault(void* p, size_t bytes) noexcept;

// `c` given room for `n` elements (reserve) and that room's pages had at once (prefault): memory
// about to be filled, where the first write to each page would be a page fault of its own.
template <typename C>
void reserve_prefaulted(C& c, size_t n) {
  c.reserve(n);
  prefault(c.data(), c.capacity() * sizeof(typename C::value_type));
}

// `bytes` of the heap's memory (throws std::bad_alloc), its whole pages had at once; and its
// release.
void* allocate_prefaulted(size_t bytes);
void release_prefaulted(void* p) noexcept;

// The heap's allocator, each allocation's pages had at once: for a hash table's arrays, which
// its inserts write all over.
template <typename T>
struct PrefaultingAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  using value_type = T;
  PrefaultingAllocator() = default;
  template <typename U>
  explicit PrefaultingAllocator(const PrefaultingAllocator<U>& /*other*/) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_prefaulted(n * sizeof(T))); }
  void deallocate(T* p, size_t /*n*/) noexcept { release_prefaulted(p); }
  template <typename U>
  bool operator==(const PrefaultingAllocator<U>& /*other*/) const {
    return true;
  }
};

// The allocator for such a table's containers.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_huge(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { release_huge(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>& /*other*/) const {
    return true;
  }
};

}  // namespace pdfix::io
