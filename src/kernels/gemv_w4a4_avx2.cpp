// w4a4 on AVX2 (see gemv_w4a4_avx2_body.h).
#include "kernels/gemv_w4a4_avx2_body.h"

namespace nvfp4::kern {

void gemv_w4a4_avx2(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  w4a4_avx2_body::gemv<false>(w, a, tb, te, y);
}

}  // namespace nvfp4::kern
