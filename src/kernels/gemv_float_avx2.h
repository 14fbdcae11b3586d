// Shared by gemv_a16_avx2.cpp and gemv_f32_avx2.cpp (AVX2 flags only): decoding one packed record
// to floats, 8 rows (one half of the 16-row tile) at a time. Each dword lane r holds 8 codes of
// row r; vpermps reads the low 3 bits of each lane (the magnitude), the sign is bit 3 moved to
// bit 31. Element order as in gemv_float_avx512.h.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nvfp4::kern::f256 {

inline constexpr float kMag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
inline constexpr int kElem[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};

inline __m256 code_ps(__m256i v, __m256 lut) {
  const __m256 mag = _mm256_permutevar8x32_ps(lut, v);
  const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(v, 28), _mm256_set1_epi32(INT32_MIN));
  return _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
}

// Half h (0: rows 0-7, 1: rows 8-15) of the record at rec: 16 vectors of 8 rows.
inline void decode(const uint8_t* rec, int h, __m256 f[16]) {
  const __m256 lut = _mm256_loadu_ps(kMag);
  const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 32 * h));
  const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 64 + 32 * h));
  for (int i = 0; i < 8; ++i) {
    f[i] = code_ps(_mm256_srli_epi32(h0, 4 * i), lut);
    f[8 + i] = code_ps(_mm256_srli_epi32(h1, 4 * i), lut);
  }
}

// e4m3 of 8 rows' scale bytes as floats (exact).
inline __m256 e4m3_ps(const uint8_t* s8) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  const __m256 normal =
      _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(v, 20), _mm256_set1_epi32(120 << 23)));
  const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(0x1p-9f));
  return _mm256_blendv_ps(normal, sub, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), v)));
}

}  // namespace nvfp4::kern::f256
