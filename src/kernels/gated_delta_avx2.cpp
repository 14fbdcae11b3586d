// The delta rule of one value head (gated_delta_head.h) on AVX2: gated_delta_vec.h over 8 lanes
// of j, mem held in 8 vectors, d and o in 4 each (16 ymm registers). The same bits as the scalar
// form (tests/test_gated_delta.cpp, ==).
#include <immintrin.h>

#include "kernels/gated_delta_vec.h"
#include "kernels/packed.h"

namespace nvfp4::kern {
namespace {
struct F256 {
  using F = __m256;
  static constexpr int64_t kLanes = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
};
}  // namespace

void delta_head_avx2(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                     float* o, int64_t dk, int64_t dv, const float* next) {
  delta_head_vec<F256, 8, 4>(S, k, q, v, decay, beta, mem, o, dk, dv, next);
}
}  // namespace nvfp4::kern
