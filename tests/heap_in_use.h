// Bytes the allocator has handed out and not taken back (glibc: small and mmapped chunks; under
// AddressSanitizer, its allocator's count), for tests that bound what a structure holds.
#pragma once
#include <malloc.h>

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define NVFP4_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NVFP4_TEST_ASAN 1
#endif
#endif
#ifdef NVFP4_TEST_ASAN
#include <sanitizer/allocator_interface.h>
#endif

namespace nvfp4::test {

inline size_t heap_in_use() {
#ifdef NVFP4_TEST_ASAN
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#endif
}

}  // namespace nvfp4::test
