// Memory for the large buffers that every token streams again (packed weights, the head, the KV
// cache). Each allocation of at least kHugeMin bytes is its own anonymous mapping aligned to 2 MiB
// and advised MADV_HUGEPAGE, so that where the kernel's transparent huge pages are "madvise" or
// "always" it is backed by 2 MiB pages. Streaming through 4 KiB pages costs a page walk every 4 KiB
// (under a hypervisor, a nested one): on the machine of docs/BENCHMARKS.md section 12 one thread
// read 12.7 GB/s through 4 KiB pages and 19.7 GB/s through 2 MiB ones. Where the kernel refuses the
// advice (huge pages "never", no THP), the mapping is ordinary 4 KiB pages; nothing else changes.
// Smaller allocations go to operator new. The placement of bytes never changes a result.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace nvfp4 {

inline constexpr size_t kHugePage = size_t{2} << 20;
inline constexpr size_t kHugeMin = kHugePage;  // a smaller block could not hold a whole huge page

// Raw interface: n bytes, 64-byte aligned at least (2 MiB when n >= kHugeMin, mapped on its own,
// released with huge_free(p, n)). huge = false maps 4 KiB pages (MADV_NOHUGEPAGE), for benchmarks
// that compare the two. Throws std::bad_alloc.
void* huge_alloc(size_t n, bool huge = true);
void huge_free(void* p, size_t n) noexcept;
// Bytes of [p, p + n) the kernel backs with huge pages now (from /proc/self/smaps; 0 if unknown).
size_t huge_resident_bytes(const void* p, size_t n);

template <class T>
struct HugePageAllocator {
  using value_type = T;
  bool huge = true;
  HugePageAllocator() = default;
  explicit HugePageAllocator(bool h) : huge(h) {}
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>& o) : huge(o.huge) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) { return static_cast<T*>(huge_alloc(n * sizeof(T), huge)); }
  void deallocate(T* p, size_t n) noexcept { huge_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }  // any one frees any other's blocks
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace nvfp4
