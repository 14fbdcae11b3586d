// The delta rule of one value head (gated_delta_head.h) compiled for AVX-512: 16 lanes of j, the
// same bits as the scalar form (no FMA: -ffp-contract=off).
#include "kernels/gated_delta_head.h"

namespace nvfp4::kern {
void delta_head_avx512(float* S, const float* k, const float* q, const float* v, float decay, float beta, float* mem,
                       float* o, int64_t dk, int64_t dv) {
  delta_head_body(S, k, q, v, decay, beta, mem, o, dk, dv);
}
}  // namespace nvfp4::kern
