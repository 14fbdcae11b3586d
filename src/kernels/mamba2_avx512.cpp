// One Mamba-2 head's scan (mamba2_scan.h) on avx512: mamba2_scan_vec.h over 16 lanes of p, xdt and y
// of up to 8 vectors each in registers. The same bits as the scalar form (tests/test_mamba2.cpp, ==).
#include "kernels/mamba2_scan.h"
#include "kernels/float_lanes_avx512.h"
#include "kernels/mamba2_scan_vec.h"

namespace nvfp4::kern {
void mamba2_scan_avx512(float* S, const float* x, const float* B, const float* C, float dt, float dA, float Dh, float* xdt, float* y,
                      int64_t ds, int64_t hd, const float* next) {
  mamba2_scan_vec<F512, 8>(S, x, B, C, dt, dA, Dh, xdt, y, ds, hd, next);
}
}  // namespace nvfp4::kern
