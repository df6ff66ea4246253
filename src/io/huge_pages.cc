#include "io/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace pdfix::io {

namespace {

size_t pages_of(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

}  // namespace

void* allocate_huge(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes);
  const size_t size = pages_of(bytes);
  // mmap promises only 4 KiB alignment: map a huge page more and give back what lies outside the
  // aligned run, or the kernel can back none of it with huge pages.
  void* mapped =
      ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  char* const first = static_cast<char*>(mapped);
  const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(first) % kHugePage) % kHugePage;
  char* const aligned = first + head;
  if (head > 0) ::munmap(first, head);
  ::munmap(aligned + size, kHugePage - head);
  // Advice only: where THP is off, the memory is the same in small pages.
  ::madvise(aligned, size, MADV_HUGEPAGE);
  return aligned;
}

void release_huge(void* p, size_t bytes) noexcept {
  if (bytes < kHugePage) {
    ::operator delete(p);
    return;
  }
  ::munmap(p, pages_of(bytes));
}

void advise_huge(void* p, size_t bytes) noexcept {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const size_t head = (kHugePage - begin % kHugePage) % kHugePage;
  if (bytes <= head) return;
  const size_t whole = (bytes - head) / kHugePage * kHugePage;
  if (whole > 0) ::madvise(static_cast<char*>(p) + head, whole, MADV_HUGEPAGE);
}

void prefault(void* p, size_t bytes) noexcept {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const size_t head = (page - begin % page) % page;
  if (bytes <= head) return;
  const size_t whole = (bytes - head) / page * page;
  if (whole > 0) ::madvise(static_cast<char*>(p) + head, whole, MADV_POPULATE_WRITE);
}

void* allocate_prefaulted(size_t bytes) {
  void* p = ::operator new(bytes);
  prefault(p, bytes);
  return p;
}

void release_prefaulted(void* p) noexcept { ::operator delete(p); }

}  // namespace pdfix::io
