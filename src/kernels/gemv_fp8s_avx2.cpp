// The scaled FP8 forms (MXFP8, FP8 128x128 blocks) on AVX2: 4 rows x up to 2 columns per pass, 8
// inputs per step (inside one scale block: 8 divides 32 and 128), each weight widened exactly from
// E4M3 and multiplied by its scale in one float32 product, as fp8s_at (gemv_fp8s.cpp) does, then
// float32 FMA; the tail (n_in % 8, FP8 blocks only) in scalar code.
#include <immintrin.h>

#include <cstring>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

// 8 E4M3 bytes exactly as floats (gemv_dense_avx2.cpp: through F16 bits, times 2^8).
inline __m256 e4m3x8(const uint8_t* p) {
  const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7),
                                 _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8));
  return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
}

// The scale of row r at input i.
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

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <DType D, int NR, int NC>
void pass(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t r0, int64_t c0, float* y) {
  const uint8_t* sc = w + n_out * n_in;
  __m256 acc[NR][NC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
  const int64_t main = n_in & ~int64_t{7};
  for (int64_t i = 0; i < main; i += 8) {
    __m256 xv[NC];
    for (int c = 0; c < NC; ++c) xv[c] = _mm256_loadu_ps(x + (c0 + c) * n_in + i);
    for (int r = 0; r < NR; ++r) {
      const __m256 wv = _mm256_mul_ps(e4m3x8(w + (r0 + r) * n_in + i), _mm256_set1_ps(scale_at<D>(sc, n_in, r0 + r, i)));
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int c = 0; c < NC; ++c) {
      float s = hsum(acc[r][c]);
      for (int64_t i = main; i < n_in; ++i) s += fp8s_at(D, w, n_out, n_in, r0 + r, i) * x[(c0 + c) * n_in + i];
      y[(c0 + c) * n_out + r0 + r] = s;
    }
  }
}

template <DType D>
void rows(const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb, int64_t re, float* y) {
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

void gemv_fp8s_avx2(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb,
                    int64_t re, float* y) {
  if (dtype == DType::mxfp8) rows<DType::mxfp8>(w, n_out, n_in, x, n, rb, re, y);
  else if (dtype == DType::fp8_b128) rows<DType::fp8_b128>(w, n_out, n_in, x, n, rb, re, y);
  else gemv_dense_avx2(dtype, w, n_out, n_in, x, n, rb, re, y);
}

}  // namespace nvfp4::kern
