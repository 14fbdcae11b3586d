// The delta rule of one value head (gated_delta_head.h) on AVX-512: gated_delta_vec.h over 16
// lanes of j, mem held in 8 vectors (128 lanes: a Qwen3.6 head's d_v in one chunk), d and o in 8
// each. The same bits as the scalar form (tests/test_gated_delta.cpp, ==).
#include <immintrin.h>

#include "kernels/gated_delta_vec.h"
#include "kernels/packed.h"

namespace nvfp4::kern {
namespace {
struct F512 {
  using F = __m512;
  static constexpr int64_t kLanes = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
};
}  // namespace

void delta_head_avx512(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                       float* o, int64_t dk, int64_t dv, const float* next) {
  delta_head_vec<F512, 8, 8>(S, k, q, v, decay, beta, mem, o, dk, dv, next);
}
}  // namespace nvfp4::kern
