// Bytes the allocator has handed out and not taken back (glibc: small and mmapped chunks; in a
// sanitizer build, NVFP4_SANITIZED, the sanitizer's allocator's count), for tests that bound what
// a structure holds.
#pragma once
#include <cstddef>

#if defined(NVFP4_SANITIZED)
#include <sanitizer/allocator_interface.h>
#else
#include <malloc.h>
#endif

namespace nvfp4::test {

inline size_t heap_in_use() {
#if defined(NVFP4_SANITIZED)
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#endif
}

}  // namespace nvfp4::test
