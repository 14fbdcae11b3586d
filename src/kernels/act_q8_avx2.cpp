// a16q8 activation quantizer on AVX2, writing the kernels' group-major ActQ8 directly: the
// AVX-512 quantizer's steps (act_q8_avx512.cpp) on 8 lanes, so the reference's bits:
// amax by max-reduction (vmaxps(|x|, mx) keeps mx for a NaN |x|, as the reference's `a > amax`
// skips it), m = the first element whose |x| equals amax, iscale = -127/m and d = 1/iscale in
// scalar code, q = min(127, cvtps2dq(x * iscale)) (round to nearest even, the reference's
// nearbyint under the default rounding mode; |x * iscale| <= 127, so the int32 -> int8 packs
// never saturate), corr = -12 * the sum of the group's q.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void prepare_q8_avx2(const float* x, int64_t n, int64_t n_in, ActQ8& out) {
  out.shape(n, n_in);
  prepare_q8_cols_avx2(x, 0, n, out);
}

void prepare_q8_cols_avx2(const float* x, int64_t t0, int64_t t1, ActQ8& out) {
  const int64_t n_in = out.n_in;
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i q127 = _mm256_set1_epi32(127);
  // packs of two 8-lane vectors leave dwords (a0-3, b0-3, a0-3, b0-3 | a4-7, b4-7, ...): 0, 4, 1, 5.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * n_in;
    for (int64_t b = 0; b < out.blocks; ++b) {
      const int64_t lo = b * kQ8Block, hi = std::min<int64_t>(n_in, lo + kQ8Block);
      __m256 mx = _mm256_setzero_ps();
      for (int64_t i = lo; i < hi; i += 8) mx = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xt + i), absmask), mx);
      const float amax = hmax(mx);
      const int64_t g0 = lo / kGroup, g1 = hi / kGroup;
      if (!(amax > 0.0f)) {  // all zero (NaN never reaches here: the reference's rule is the same)
        out.set_zero_block(t, b, g0, g1);
        continue;
      }
      const float iscale = -127.0f / first_of_magnitude(xt, lo, hi, amax);
      const __m256 vs = _mm256_set1_ps(iscale);
      for (int64_t g = g0; g < g1; ++g) {
        const float* xg = xt + g * kGroup;
        const __m256i qa = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg), vs)), q127);
        const __m256i qb = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + 8), vs)), q127);
        const __m256i p16 = _mm256_packs_epi32(qa, qb);
        const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16, p16), order);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qg(g, t)), _mm256_castsi256_si128(p8));
        out.set_corr(g, t, -12 * hsum(_mm256_add_epi32(qa, qb)));
      }
      out.d[t * out.blocks + b] = 1.0f / iscale;
    }
  }
}

}  // namespace nvfp4::kern
