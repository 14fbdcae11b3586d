// The delta rule of one value head (gated_delta_head.h) on AVX-512: gated_delta_vec.h over 16
// lanes of j, mem held in 8 vectors (128 lanes: a Qwen3.6 head's d_v in one chunk), d and o in 8
// each. The same bits as the scalar form (tests/test_gated_delta.cpp, ==).
#include "kernels/float_lanes_avx512.h"
#include "kernels/gated_delta_vec.h"
#include "kernels/packed.h"

namespace nvfp4::kern {
void delta_head_avx512(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                       float* o, int64_t dk, int64_t dv, const float* next) {
  delta_head_vec<F512, 8, 8>(S, k, q, v, decay, beta, mem, o, dk, dv, next);
}
}  // namespace nvfp4::kern
