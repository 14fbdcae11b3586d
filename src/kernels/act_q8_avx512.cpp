// a16q8 activation quantizer on AVX-512, writing the kernels' group-major ActQ8 directly. The same
// operations as the reference quantize_act_q8, so the same bits: amax by max-reduction, m = the
// first element whose |x| equals it, iscale = -127/m and d = 1/iscale in scalar code,
// q = min(127, cvtps2dq(x * iscale)) (round to nearest even, the reference's nearbyint under
// the default rounding mode; |x * iscale| <= 127 so no saturation).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/packed.h"

namespace nvfp4::kern {

void prepare_q8_avx512(const float* x, int64_t n, int64_t n_in, ActQ8& out) {
  out.shape(n, n_in);
  prepare_q8_cols_avx512(x, 0, n, out);
}

void prepare_q8_cols_avx512(const float* x, int64_t t0, int64_t t1, ActQ8& out) {
  const int64_t n_in = out.n_in;
  const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * n_in;
    for (int64_t b = 0; b < out.blocks; ++b) {
      const int64_t lo = b * kQ8Block, hi = std::min<int64_t>(n_in, lo + kQ8Block);
      __m512 mx = _mm512_setzero_ps();
      for (int64_t i = lo; i < hi; i += kGroup) mx = _mm512_max_ps(mx, _mm512_and_ps(_mm512_loadu_ps(xt + i), absmask));
      const float amax = _mm512_reduce_max_ps(mx);
      const int64_t g0 = lo / kGroup, g1 = hi / kGroup;
      if (!(amax > 0.0f)) {  // all zero (NaN never reaches here: the reference's rule is the same)
        out.set_zero_block(t, b, g0, g1);
        continue;
      }
      const float iscale = -127.0f / first_of_magnitude(xt, lo, hi, amax);
      const __m512 vs = _mm512_set1_ps(iscale);
      for (int64_t g = g0; g < g1; ++g) {
        const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xt + g * kGroup), vs)),
                                           _mm512_set1_epi32(127));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out.qg(g, t)), _mm512_cvtepi32_epi8(q));
        out.set_corr(g, t, -12 * _mm512_reduce_add_epi32(q));
      }
      out.d[t * out.blocks + b] = 1.0f / iscale;
    }
  }
}

}  // namespace nvfp4::kern
