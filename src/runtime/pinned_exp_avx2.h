// pinned::exp and the two loops that call it most (softmax numerators, SwiGLU) on 4 double lanes
// of AVX2. Every lane performs the scalar function's IEEE operations in its order (the build
// forbids contraction, so each _mm256_mul_pd / _mm256_add_pd is one rounding), hence the same
// bits; tests/test_pinned_math.cpp checks that against the scalar code. Include only from
// *_avx2.cpp files (compiled with AVX2).
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "runtime/pinned_math.h"

namespace nvfp4::pinned {
namespace {

inline __m256d exp_pd256(__m256d x) {
  // The clamps as the scalar ternaries: a NaN fails both comparisons and stays NaN.
  x = _mm256_blendv_pd(x, _mm256_set1_pd(-700.0), _mm256_cmp_pd(x, _mm256_set1_pd(-700.0), _CMP_LT_OQ));
  x = _mm256_blendv_pd(x, _mm256_set1_pd(709.0), _mm256_cmp_pd(x, _mm256_set1_pd(709.0), _CMP_GT_OQ));
  const __m256d round = _mm256_set1_pd(6755399441055744.0);
  const __m256d k = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)), round), round);
  const __m256d r = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(k, _mm256_set1_pd(6.93147180369123816490e-01))),
                                  _mm256_mul_pd(k, _mm256_set1_pd(1.90821492927058770002e-10)));
  __m256d p = _mm256_set1_pd(1.0 / 6227020800.0);
  const double c[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                      1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                      1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                      1.0};
  for (double ci : c) p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(ci));
  // 2^k: k is an integer in [-1010, 1023], exact in int32.
  const __m256i ki = _mm256_cvtepi32_epi64(_mm256_cvttpd_epi32(k));
  const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
}

// out[j] = float(exp(double(s[j] - mx))) for j in [0, n).
inline void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n) {
  int64_t j = 0;
  const __m128 m = _mm_set1_ps(mx);
  for (; j + 4 <= n; j += 4) {
    const __m256d d = _mm256_cvtps_pd(_mm_sub_ps(_mm_loadu_ps(s + j), m));
    _mm_storeu_ps(out + j, _mm256_cvtpd_ps(exp_pd256(d)));
  }
  for (; j < n; ++j) out[j] = static_cast<float>(exp(static_cast<double>(s[j] - mx)));
}

// g[i] = float(g / (1 + exp(-g))) * u[i], the SiLU in double as pinned::silu.
inline void swiglu_avx2_body(float* g, const float* u, int64_t n) {
  int64_t i = 0;
  const __m256d one = _mm256_set1_pd(1.0);
  for (; i + 4 <= n; i += 4) {
    const __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(g + i));
    const __m256d e = exp_pd256(_mm256_xor_pd(x, _mm256_set1_pd(-0.0)));  // -x
    const __m128 s = _mm256_cvtpd_ps(_mm256_div_pd(x, _mm256_add_pd(one, e)));
    _mm_storeu_ps(g + i, _mm_mul_ps(s, _mm_loadu_ps(u + i)));
  }
  for (; i < n; ++i) g[i] = silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4::pinned
