// a16q8 on AVX-VNNI: the AVX2 kernel with its group sums by vpdpbusd on 256-bit registers
// (see gemv_a16q8_avx2_body.h for the kernel and why its bits are the reference's).
#include "kernels/gemv_a16q8_avx2_body.h"

namespace nvfp4::kern {

void gemv_a16q8_avxvnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemv<true>(w, a, tb, te, y);
}

void gemm_a16q8_avxvnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemm<true>(w, a, tb, te, y);
}

}  // namespace nvfp4::kern
