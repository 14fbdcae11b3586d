// w4a4 on AVX-VNNI: the AVX2 kernel with its group sums by vpdpbusd (see gemv_w4a4_avx2_body.h).
#include "kernels/gemv_w4a4_avx2_body.h"

namespace nvfp4::kern {

void gemv_w4a4_avxvnni(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  w4a4_avx2_body::gemv<true>(w, a, tb, te, y);
}

}  // namespace nvfp4::kern
