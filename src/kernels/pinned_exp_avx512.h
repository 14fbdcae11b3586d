// The 8-lane AVX-512 traits of pinned_exp_vec.h. Include only from *_avx512*.cpp files (compiled
// with AVX-512 F/DQ/VL).
#pragma once
#include <immintrin.h>

#include "kernels/pinned_exp_vec.h"

namespace nvfp4::pinned {
namespace {

struct Avx512 {
  using D = __m512d;
  using F = __m256;
  static constexpr int64_t kLanes = 8;
  static D set(double v) { return _mm512_set1_pd(v); }
  static D add(D a, D b) { return _mm512_add_pd(a, b); }
  static D sub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D div(D a, D b) { return _mm512_div_pd(a, b); }
  static D neg(D a) { return _mm512_xor_pd(a, _mm512_set1_pd(-0.0)); }  // -x, sign flip
  static D select_lt(D x, D bound, D v) { return _mm512_mask_mov_pd(x, _mm512_cmp_pd_mask(x, bound, _CMP_LT_OQ), v); }
  static D select_gt(D x, D bound, D v) { return _mm512_mask_mov_pd(x, _mm512_cmp_pd_mask(x, bound, _CMP_GT_OQ), v); }
  static D pow2(D k) {  // 2^k for integral k in [-1022, 1023]
    const __m512i ki = _mm512_cvtepi32_epi64(_mm512_cvttpd_epi32(k));
    return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(ki, _mm512_set1_epi64(1023)), 52));
  }
  static D load_f(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static D load_f_minus(const float* p, float m) {  // double(p[i] - m), the difference in float
    return _mm512_cvtps_pd(_mm256_sub_ps(_mm256_loadu_ps(p), _mm256_set1_ps(m)));
  }
  static F to_f(D v) { return _mm512_cvtpd_ps(v); }
  static void store_f(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store_f_times(float* p, F v, const float* u) { _mm256_storeu_ps(p, _mm256_mul_ps(v, _mm256_loadu_ps(u))); }
};

inline void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n) { exp_shifted_vec<Avx512>(s, mx, out, n); }
inline void swiglu_avx512_body(float* g, const float* u, int64_t n) { swiglu_vec<Avx512>(g, u, n); }
inline void silu_avx512_body(float* x, int64_t n) { silu_vec<Avx512>(x, n); }
inline void geglu_avx512_body(float* g, const float* u, int64_t n) { geglu_vec<Avx512>(g, u, n); }

}  // namespace
}  // namespace nvfp4::pinned
