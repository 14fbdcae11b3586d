// One Mamba-2 head's scan (mamba2_scan.h) compiled for AVX512: lanes of p, the same bits as the
// scalar form (no FMA: -ffp-contract=off).
#include "kernels/mamba2_scan.h"

namespace nvfp4::kern {
void mamba2_scan_avx512(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                      int64_t ds, int64_t hd) {
  mamba2_scan_body(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd);
}
}  // namespace nvfp4::kern
