// The 4-lane AVX2 traits of pinned_exp_vec.h. Include only from *_avx2.cpp files (compiled with
// AVX2).
#pragma once
#include <immintrin.h>

#include "kernels/pinned_exp_vec.h"

namespace nvfp4::pinned {
namespace {

struct Avx2 {
  using D = __m256d;
  using F = __m128;
  static constexpr int64_t kLanes = 4;
  static D set(double v) { return _mm256_set1_pd(v); }
  static D add(D a, D b) { return _mm256_add_pd(a, b); }
  static D sub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D div(D a, D b) { return _mm256_div_pd(a, b); }
  static D neg(D a) { return _mm256_xor_pd(a, _mm256_set1_pd(-0.0)); }  // -x, sign flip
  static D select_lt(D x, D bound, D v) { return _mm256_blendv_pd(x, v, _mm256_cmp_pd(x, bound, _CMP_LT_OQ)); }
  static D select_gt(D x, D bound, D v) { return _mm256_blendv_pd(x, v, _mm256_cmp_pd(x, bound, _CMP_GT_OQ)); }
  static D pow2(D k) {  // 2^k for integral k in [-1022, 1023]
    const __m256i ki = _mm256_cvtepi32_epi64(_mm256_cvttpd_epi32(k));
    return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52));
  }
  static D load_f(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static D load_f_minus(const float* p, float m) {  // double(p[i] - m), the difference in float
    return _mm256_cvtps_pd(_mm_sub_ps(_mm_loadu_ps(p), _mm_set1_ps(m)));
  }
  static F to_f(D v) { return _mm256_cvtpd_ps(v); }
  static void store_f(float* p, F v) { _mm_storeu_ps(p, v); }
  static void store_f_times(float* p, F v, const float* u) { _mm_storeu_ps(p, _mm_mul_ps(v, _mm_loadu_ps(u))); }
};

inline void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n) { exp_shifted_vec<Avx2>(s, mx, out, n); }
inline void swiglu_avx2_body(float* g, const float* u, int64_t n) { swiglu_vec<Avx2>(g, u, n); }
inline void silu_avx2_body(float* x, int64_t n) { silu_vec<Avx2>(x, n); }
inline void geglu_avx2_body(float* g, const float* u, int64_t n) { geglu_vec<Avx2>(g, u, n); }

}  // namespace
}  // namespace nvfp4::pinned
