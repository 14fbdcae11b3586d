// Dense (F32/F16/BF16/E4M3 weights) on AVX2: 4 rows x up to 2 columns per pass, 8 inputs per step,
// the tail (n_in % 8) in scalar code, float32 FMA. Within the derived bound of FP64.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <DType D>
inline __m256 load_w(const uint8_t* w, int64_t k) {
  if constexpr (D == DType::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + k);
  } else if constexpr (D == DType::f16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + k)));
  } else if constexpr (D == DType::e4m3) {
    // E4M3 s.eeee.mmm as F16 bits s.0eeee.mmm0000000 (exponent bias 15 instead of 7, E4M3's
    // subnormals landing on F16 subnormals), widened, times 2^8: every E4M3 value exactly.
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + k)));
    const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7),
                                   _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8));
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(w) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <DType D, int NR, int NC>
void pass(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t r0, int64_t c0, float* y) {
  __m256 acc[NR][NC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
  const int64_t main = n_in & ~int64_t{7};
  for (int64_t i = 0; i < main; i += 8) {
    __m256 xv[NC];
    for (int c = 0; c < NC; ++c) xv[c] = _mm256_loadu_ps(x + (c0 + c) * n_in + i);
    for (int r = 0; r < NR; ++r) {
      const __m256 wv = load_w<D>(w, (r0 + r) * n_in + i);
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int c = 0; c < NC; ++c) {
      float s = hsum(acc[r][c]);
      for (int64_t i = main; i < n_in; ++i) s += dense_at(D, w, (r0 + r) * n_in + i) * x[(c0 + c) * n_in + i];
      y[(c0 + c) * n_out + r0 + r] = s;
    }
  }
}

template <DType D>
void rows(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb,
          int64_t re, float* y) {
  for (int64_t r = rb; r < re;) {
    const bool four = re - r >= 4;
    for (int64_t c0 = 0; c0 < n; c0 += 2) {
      const bool two = n - c0 >= 2;
      if (four && two) pass<D, 4, 2>(w, n_out, n_in, x, r, c0, y);
      else if (four) pass<D, 4, 1>(w, n_out, n_in, x, r, c0, y);
      else if (two) pass<D, 1, 2>(w, n_out, n_in, x, r, c0, y);
      else pass<D, 1, 1>(w, n_out, n_in, x, r, c0, y);
    }
    r += four ? 4 : 1;
  }
}

}  // namespace

void gemv_dense_avx2(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
                     int64_t n, int64_t rb, int64_t re, float* y) {
  switch (dtype) {
    case DType::f32: rows<DType::f32>(w, n_out, n_in, x, n, rb, re, y); break;
    case DType::f16: rows<DType::f16>(w, n_out, n_in, x, n, rb, re, y); break;
    case DType::bf16: rows<DType::bf16>(w, n_out, n_in, x, n, rb, re, y); break;
    case DType::e4m3: rows<DType::e4m3>(w, n_out, n_in, x, n, rb, re, y); break;
    case DType::mxfp8:
    case DType::fp8_b128: break;  // the scaled forms run through the table's fp8s entry
  }
}

}  // namespace nvfp4::kern
