// The delta rule of one value head (gated_delta_head.h) on AVX2: gated_delta_vec.h over 8 lanes
// of j, mem held in 8 vectors, d and o in 4 each (16 ymm registers). The same bits as the scalar
// form (tests/test_gated_delta.cpp, ==).
#include "kernels/float_lanes_avx2.h"
#include "kernels/gated_delta_vec.h"
#include "kernels/packed.h"

namespace nvfp4::kern {
void delta_head_avx2(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                     float* o, int64_t dk, int64_t dv, const float* next) {
  delta_head_vec<F256, 8, 4>(S, k, q, v, decay, beta, mem, o, dk, dv, next);
}
}  // namespace nvfp4::kern
