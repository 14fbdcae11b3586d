// acc + vpdpbusd(u, the 4 signed bytes at q broadcast to every lane), with the broadcast as the
// instruction's {1to16} memory operand. GCC 12 does not fold _mm512_set1_epi32 of a load into
// vpdpbusd and emits a separate vpbroadcastd: 21 instructions instead of 13 for a16q8's column step
// over two groups. In a probe loop of those instructions alone the two forms run at the same rate
// on Zen 4 (9 cycles, the VNNI pipes' bound); in the prompt kernel, with its decode, loads and
// prefetches around them, the embedded form measured 1.06x from cache and 1.03-1.04x on whole
// prompts (BENCHMARKS 46). The integer result is vpdpbusd's either way.
// Used where a broadcast feeds one vpdpbusd and the loop is compute-bound (a16q8's prompt windows);
// where one broadcast feeds several (decode's tile pairs) the separate one stays.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nvfp4::kern {

inline __m512i dpbusd_bcst(__m512i acc, __m512i u, const int8_t* q) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(q)));
  return acc;
}

}  // namespace nvfp4::kern
