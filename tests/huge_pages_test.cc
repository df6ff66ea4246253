// Memory for big tables: what is 2 MiB and more is the process's own mapping, at a huge page's
// boundary and advised for huge pages ("hg" in the kernel's VmFlags), and unmapped when given back;
// a table in it keeps its contents as it grows.
#include "io/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace pdfix::io {
namespace {

struct Vma {
  uintptr_t start = 0;
  uintptr_t end = 0;
  std::string flags;
};

// The mapping of this process that holds `p`, from /proc/self/smaps, if any does.
std::optional<Vma> vma_of(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  std::optional<Vma> found;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> start >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {
      if (found) return found;  // the one that held `p` had no VmFlags line
      if (start <= at && at < end) found = Vma{.start = start, .end = end};
      continue;
    }
    if (found && line.starts_with("VmFlags:")) {
      found->flags = line.substr(8);
      return found;
    }
  }
  return found;
}

bool advised(const Vma& v) { return (" " + v.flags + " ").find(" hg ") != std::string::npos; }

TEST(HugePages, LargeAllocationsAreAlignedAdvisedAndGivenBack) {
  const size_t bytes = 3 * kHugePage + 5;
  void* p = allocate_huge(bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0U);
  std::memset(p, 0xa5, bytes);  // all of it is there to write
  const std::optional<Vma> v = vma_of(p);
  ASSERT_TRUE(v.has_value());
  EXPECT_LE(v->start, reinterpret_cast<uintptr_t>(p));
  EXPECT_GE(v->end, reinterpret_cast<uintptr_t>(p) + 4 * kHugePage);
  EXPECT_TRUE(advised(*v)) << "VmFlags:" << v->flags;
  release_huge(p, bytes);
  EXPECT_FALSE(vma_of(p).has_value());
}

TEST(HugePages, SmallAllocationsAreTheHeaps) {
  void* p = allocate_huge(100);
  const std::optional<Vma> v = vma_of(p);
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(advised(*v)) << "VmFlags:" << v->flags;
  release_huge(p, 100);
}

TEST(HugePages, ATableGrowsPastAHugePageWithItsContents) {
  const uint64_t* data = nullptr;
  {
    std::vector<uint64_t, HugePageAllocator<uint64_t>> table;
    for (uint64_t i = 0; i < kHugePage; ++i) table.push_back(i * 2654435761U);
    for (uint64_t i = 0; i < kHugePage; ++i) ASSERT_EQ(table[i], i * 2654435761U) << i;
    data = table.data();
    const std::optional<Vma> v = vma_of(data);
    ASSERT_TRUE(v.has_value());
    EXPECT_TRUE(advised(*v)) << "VmFlags:" << v->flags;
  }
  // Given back whole when the table went: its first page and its last.
  EXPECT_FALSE(vma_of(data).has_value());
  EXPECT_FALSE(vma_of(data + kHugePage - 1).has_value());
}

// A buffer someone else allocated (a string reserved for a large read): the huge pages wholly
// within it are advised, and nothing outside it.
TEST(HugePages, ABuffersWholeHugePagesAreAdvised) {
  std::string text;
  text.reserve(4 * kHugePage);
  advise_huge(text.data(), text.capacity());
  const auto begin = reinterpret_cast<uintptr_t>(text.data());
  const uintptr_t first = (begin + kHugePage - 1) / kHugePage * kHugePage;
  const std::optional<Vma> inside = vma_of(reinterpret_cast<const void*>(first));
  ASSERT_TRUE(inside.has_value());
  EXPECT_TRUE(advised(*inside)) << "VmFlags:" << inside->flags;
  EXPECT_EQ(inside->start, first);
  EXPECT_EQ(inside->end, (begin + text.capacity()) / kHugePage * kHugePage);
  // A buffer within one huge page has none to advise.
  std::string small(100, 'x');
  advise_huge(small.data(), small.size());
  const std::optional<Vma> heap = vma_of(small.data());
  ASSERT_TRUE(heap.has_value());
  EXPECT_FALSE(advised(*heap)) << "VmFlags:" << heap->flags;
}

// A buffer about to be written has the whole pages within it backed at once (no fault each as it
// is written), and the pages it only shares with its neighbours are left as they were.
TEST(HugePages, ABuffersWholePagesArePrefaulted) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kPages = 64;
  void* mapped =
      ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* base = static_cast<unsigned char*>(mapped);
  std::vector<unsigned char> resident(kPages);
  ASSERT_EQ(::mincore(base, kPages * page, resident.data()), 0);
  ASSERT_EQ(std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; }),
            0);
  prefault(base + 100, kPages * page - 200);
  ASSERT_EQ(::mincore(base, kPages * page, resident.data()), 0);
  EXPECT_FALSE(resident.front() & 1);
  EXPECT_FALSE(resident.back() & 1);
  for (size_t i = 1; i + 1 < kPages; ++i) EXPECT_TRUE(resident[i] & 1) << "page " << i;
  EXPECT_EQ(base[page], 0);  // backed by zeroed pages, as a fault would have
  ::munmap(mapped, kPages * page);
}

// Memory a container is about to fill is there before the first write: a vector's reserved room
// and a prefaulting allocator's allocation (both of a size the heap maps afresh, not yet touched).
TEST(HugePages, ReservedRoomAndPrefaultedAllocationsAreResident) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto resident_pages = [&](const void* p, size_t bytes) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) / page * page;
    const size_t pages = (reinterpret_cast<uintptr_t>(p) + bytes - first + page - 1) / page;
    std::vector<unsigned char> in(pages);
    EXPECT_EQ(::mincore(reinterpret_cast<void*>(first), pages * page, in.data()), 0);
    return std::count_if(in.begin(), in.end(), [](unsigned char r) { return r & 1; });
  };
  // Past glibc's largest mmap threshold (32 MiB): each allocation a fresh mapping.
  constexpr size_t kBytes = size_t{34} << 20;
  std::vector<uint64_t> v;
  reserve_prefaulted(v, kBytes / sizeof(uint64_t));
  EXPECT_GE(resident_pages(v.data(), kBytes), static_cast<long>(kBytes / page - 2));
  PrefaultingAllocator<uint64_t> allocator;
  uint64_t* p = allocator.allocate(kBytes / sizeof(uint64_t));
  EXPECT_GE(resident_pages(p, kBytes), static_cast<long>(kBytes / page - 2));
  allocator.deallocate(p, kBytes / sizeof(uint64_t));
  // Without it, the heap's fresh mapping has nothing resident until written.
  std::allocator<uint64_t> plain;
  uint64_t* q = plain.allocate(kBytes / sizeof(uint64_t));
  EXPECT_LT(resident_pages(q, kBytes), static_cast<long>(kBytes / page / 2));
  plain.deallocate(q, kBytes / sizeof(uint64_t));
}

}  // namespace
}  // namespace pdfix::io
