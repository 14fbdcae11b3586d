// a16q8 on AVX2 (see gemv_a16q8_avx2_body.h for the kernel and why its bits are the reference's).
#include "kernels/gemm_a16q8_avx2_signed.h"
#include "kernels/gemv_a16q8_avx2_body.h"

namespace nvfp4::kern {

template <class Pf>
void gemv_a16q8_avx2(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemv<false, Pf>(w, a, tb, te, y);
}
template void gemv_a16q8_avx2<PrefetchL1>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemv_a16q8_avx2<PrefetchL1L2>(const Packed&, const ActQ8&, int64_t, int64_t, float*);

template <class Pf>
void gemm_a16q8_avx2(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  a16q8_avx2_body::gemm_signed<Pf>(w, a, tb, te, y);  // gemm_a16q8_avx2_signed.h
}
template void gemm_a16q8_avx2<PrefetchL1>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemm_a16q8_avx2<PrefetchL1L2>(const Packed&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
