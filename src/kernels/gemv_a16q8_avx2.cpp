// a16q8 on AVX2 (see gemv_a16q8_avx2_body.h for the kernel and why its bits are the reference's).
#include "kernels/gemv_a16q8_avx2_body.h"

namespace nvfp4::kern {

void gemv_a16q8_avx2(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemv<false>(w, a, tb, te, y);
}

void gemm_a16q8_avx2(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemm<false>(w, a, tb, te, y);
}

}  // namespace nvfp4::kern
