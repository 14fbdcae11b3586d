// The scaled FP8 forms (MXFP8, FP8 128x128 blocks) on AVX-512: 4 rows x up to 4 columns per pass,
// 16 inputs per step (inside one scale block: 16 divides 32 and 128; a masked tail), each weight
// widened exactly from E4M3 and multiplied by its scale in one float32 product, as fp8s_at
// (gemv_fp8s.cpp) does, then float32 FMA and horizontal sums at the end.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

// 16 E4M3 bytes (masked) exactly as floats (gemv_dense_avx512.cpp: F16 bits, times 2^8).
inline __m512 e4m3x16(const uint8_t* p, __mmask16 m) {
  const __m256i b = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, p));
  const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7),
                                    _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8));
  return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
}

template <DType D>
inline float scale_at(const uint8_t* sc, int64_t n_in, int64_t r, int64_t i) {
  if constexpr (D == DType::mxfp8) {
    return e8m0_bits(sc[r * (n_in / kMxBlock) + i / kMxBlock]);
  } else {
    float s;
    std::memcpy(&s, sc + 4 * ((r / kFp8Block) * ((n_in + kFp8Block - 1) / kFp8Block) + i / kFp8Block), 4);
    return s;
  }
}

template <DType D, int NR, int NC>
void pass(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t r0, int64_t c0, float* y) {
  const uint8_t* sc = w + n_out * n_in;
  __m512 acc[NR][NC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < n_in; i += 16) {
    const __mmask16 m = n_in - i >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n_in - i)) - 1);
    __m512 xv[NC];
    for (int c = 0; c < NC; ++c) xv[c] = _mm512_maskz_loadu_ps(m, x + (c0 + c) * n_in + i);
    for (int r = 0; r < NR; ++r) {
      const __m512 wv = _mm512_mul_ps(e4m3x16(w + (r0 + r) * n_in + i, m), _mm512_set1_ps(scale_at<D>(sc, n_in, r0 + r, i)));
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) y[(c0 + c) * n_out + r0 + r] = _mm512_reduce_add_ps(acc[r][c]);
}

template <DType D>
void rows(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb, int64_t re, float* y) {
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

void gemv_fp8s_avx512(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb,
                      int64_t re, float* y) {
  if (dtype == DType::mxfp8) rows<DType::mxfp8>(w, n_out, n_in, x, n, rb, re, y);
  else if (dtype == DType::fp8_b128) rows<DType::fp8_b128>(w, n_out, n_in, x, n, rb, re, y);
  else gemv_dense_avx512(dtype, w, n_out, n_in, x, n, rb, re, y);
}

}  // namespace nvfp4::kern
