// pinned::exp and the two loops that call it most (softmax numerators, SwiGLU) on 8 double lanes
// of AVX-512. Every lane performs the scalar function's IEEE operations in its order (the build
// forbids contraction, so each _mm512_mul_pd / _mm512_add_pd is one rounding), hence the same
// bits; tests/test_pinned_math.cpp checks that against the scalar code. Include only from
// *_avx512*.cpp files (compiled with AVX-512 F/DQ/VL).
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "runtime/pinned_math.h"

namespace nvfp4::pinned {
namespace {

inline __m512d exp_pd512(__m512d x) {
  // The clamps as the scalar ternaries: a NaN fails both comparisons and stays NaN.
  x = _mm512_mask_mov_pd(x, _mm512_cmp_pd_mask(x, _mm512_set1_pd(-700.0), _CMP_LT_OQ), _mm512_set1_pd(-700.0));
  x = _mm512_mask_mov_pd(x, _mm512_cmp_pd_mask(x, _mm512_set1_pd(709.0), _CMP_GT_OQ), _mm512_set1_pd(709.0));
  const __m512d round = _mm512_set1_pd(6755399441055744.0);
  const __m512d k = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)), round), round);
  const __m512d r = _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(k, _mm512_set1_pd(6.93147180369123816490e-01))),
                                  _mm512_mul_pd(k, _mm512_set1_pd(1.90821492927058770002e-10)));
  __m512d p = _mm512_set1_pd(1.0 / 6227020800.0);
  const double c[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                      1.0};
  for (double ci : c) p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(ci));
  // 2^k: k is an integer in [-1010, 1023], exact in int32.
  const __m512i ki = _mm512_cvtepi32_epi64(_mm512_cvttpd_epi32(k));
  const __m512i bits = _mm512_slli_epi64(_mm512_add_epi64(ki, _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(p, _mm512_castsi512_pd(bits));
}

// out[j] = float(exp(double(s[j] - mx))) for j in [0, n).
inline void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n) {
  int64_t j = 0;
  const __m256 m = _mm256_set1_ps(mx);
  for (; j + 8 <= n; j += 8) {
    const __m512d d = _mm512_cvtps_pd(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
    _mm256_storeu_ps(out + j, _mm512_cvtpd_ps(exp_pd512(d)));
  }
  for (; j < n; ++j) out[j] = static_cast<float>(exp(static_cast<double>(s[j] - mx)));
}

// g[i] = float(g / (1 + exp(-g))) * u[i], the SiLU in double as pinned::silu.
inline void swiglu_avx512_body(float* g, const float* u, int64_t n) {
  int64_t i = 0;
  const __m512d one = _mm512_set1_pd(1.0);
  for (; i + 8 <= n; i += 8) {
    const __m512d x = _mm512_cvtps_pd(_mm256_loadu_ps(g + i));
    const __m512d e = exp_pd512(_mm512_xor_pd(x, _mm512_set1_pd(-0.0)));  // -x
    const __m256 s = _mm512_cvtpd_ps(_mm512_div_pd(x, _mm512_add_pd(one, e)));
    _mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) g[i] = silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4::pinned
