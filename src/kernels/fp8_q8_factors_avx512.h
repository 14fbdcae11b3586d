// The 16 rows' factors of a 32-block of an FP8 layer's row group (kernels/fp8_q8.h), for the
// AVX-512 files (fp8_q8_avx512vnni.cpp, fp8_q8_amx.cpp): 128 x 128 blocks' as stored, or MXFP8's
// (Fp8Q8::mx_factor lane by lane: E8M0 bits, byte 0 the subnormal 2^-127, times 2^-9).
#pragma once
#include <immintrin.h>

#include "kernels/fp8_q8.h"

namespace nvfp4::kern {

inline __m512 fp8_factors_avx512(const Fp8Q8& w, int64_t g, int64_t j32) {
  if (!w.bs.empty()) return _mm512_loadu_ps(w.b128_factors(g, j32));
  const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.mx_scales(g, j32))));
  const __m512i bits = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512()), _mm512_slli_epi32(e, 23),
                                               _mm512_set1_epi32(0x00400000));
  return _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0x1p-9f));
}

}  // namespace nvfp4::kern
