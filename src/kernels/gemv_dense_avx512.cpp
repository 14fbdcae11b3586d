// Dense (F32/F16/BF16/E4M3 weights) on AVX-512: 4 rows x up to 4 columns per pass, 16 inputs per step
// (masked tail), float32 FMA, horizontal sums at the end. Within the derived bound of FP64.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <DType D>
inline __m512 load_w(const uint8_t* w, int64_t k, __mmask16 m) {
  if constexpr (D == DType::f32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(w) + k);
  } else if constexpr (D == DType::f16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(w) + k));
  } else if constexpr (D == DType::e4m3) {
    // E4M3 as F16 bits (exponent bias 15 for 7), widened, times 2^8: exact (gemv_dense_avx2.cpp).
    const __m256i b = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, w + k));
    const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7),
                                      _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8));
    return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(w) + k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D, int NR, int NC>
void pass(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t r0, int64_t c0, float* y) {
  __m512 acc[NR][NC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_in; i += 16) {
    const __mmask16 m = n_in - i >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n_in - i)) - 1);
    __m512 xv[NC];
    for (int c = 0; c < NC; ++c) xv[c] = _mm512_maskz_loadu_ps(m, x + (c0 + c) * n_in + i);
    for (int r = 0; r < NR; ++r) {
      const __m512 wv = load_w<D>(w, (r0 + r) * n_in + i, m);
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) y[(c0 + c) * n_out + r0 + r] = _mm512_reduce_add_ps(acc[r][c]);
}

template <DType D>
void rows(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb,
          int64_t re, float* y) {
  for (int64_t r = rb; r < re;) {
    const bool four = re - r >= 4;
    for (int64_t c0 = 0; c0 < n; c0 += 4) {
      const int64_t nc = std::min<int64_t>(4, n - c0);
      if (four) {
        switch (nc) {
          case 4: pass<D, 4, 4>(w, n_out, n_in, x, r, c0, y); break;
          case 3: pass<D, 4, 3>(w, n_out, n_in, x, r, c0, y); break;
          case 2: pass<D, 4, 2>(w, n_out, n_in, x, r, c0, y); break;
          default: pass<D, 4, 1>(w, n_out, n_in, x, r, c0, y); break;
        }
      } else {
        for (int64_t c = c0; c < c0 + nc; ++c) pass<D, 1, 1>(w, n_out, n_in, x, r, c, y);
      }
    }
    r += four ? 4 : 1;
  }
}

}  // namespace

void gemv_dense_avx512(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x,
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
