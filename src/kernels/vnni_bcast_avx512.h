// acc + vpdpbusd(u, the 4 signed bytes at q broadcast to every lane), with the broadcast as the
// instruction's {1to16} memory operand: one load, no vector pipe. GCC 12 does not fold
// _mm512_set1_epi32 of a load into vpdpbusd and emits a separate vpbroadcastd, which Zen 4 runs on
// a vector pipe beside the VNNI ones: 8 vpdpbusd and 8 vpbroadcastd take 8.6 cycles there, 8
// vpdpbusd with embedded broadcasts 8.0 (BENCHMARKS 46). The integer result is vpdpbusd's either way.
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
