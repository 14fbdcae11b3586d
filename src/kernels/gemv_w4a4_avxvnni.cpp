// w4a4 on AVX-VNNI: the AVX2 kernel with its group sums by vpdpbusd (see gemv_w4a4_avx2_body.h).
#include "kernels/gemv_w4a4_avx2_body.h"

namespace nvfp4::kern {

template <class Pf>
void gemv_w4a4_avxvnni(const Packed& w, const ActFp4& a, int64_t tb, int64_t te, float* y) {
  w4a4_avx2_body::gemv<true, Pf>(w, a, tb, te, y);
}
template void gemv_w4a4_avxvnni<PrefetchL1>(const Packed&, const ActFp4&, int64_t, int64_t, float*);
template void gemv_w4a4_avxvnni<PrefetchL1L2>(const Packed&, const ActFp4&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
