// Shared by gemv_a16_avx512.cpp and gemv_f32_avx512.cpp (AVX-512 flags only): decoding one packed
// record to floats. Each dword lane r of a 64-byte half holds 8 codes of row r; vpermps reads the
// low 4 bits of each lane, so (half >> 4i) then one permute of the 16-entry E2M1 table gives
// element e(i) = (i >> 1) + 4 (i & 1) (+8 for the second half) of all 16 rows as floats.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nvfp4::kern::f512 {

inline constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// The input element of decoded vector i (0..15).
inline constexpr int kElem[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};

inline void decode(const uint8_t* rec, __m512 f[16]) {
  const __m512 lut = _mm512_loadu_ps(kE2M1);
  const __m512i h0 = _mm512_loadu_si512(rec), h1 = _mm512_loadu_si512(rec + 64);
  for (int i = 0; i < 8; ++i) {
    f[i] = _mm512_permutexvar_ps(_mm512_srli_epi32(h0, 4 * i), lut);
    f[8 + i] = _mm512_permutexvar_ps(_mm512_srli_epi32(h1, 4 * i), lut);
  }
}

// e4m3 of the 16 rows' scale bytes as floats (exact): q9 / 2^9.
inline __m512 e4m3_ps(const uint8_t* s16) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)));
  const __m512 normal =
      _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(v, 20), _mm512_set1_epi32(120 << 23)));
  const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(0x1p-9f));
  return _mm512_mask_mov_ps(normal, _mm512_cmplt_epu32_mask(v, _mm512_set1_epi32(8)), sub);
}

}  // namespace nvfp4::kern::f512
