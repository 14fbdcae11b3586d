// The Q8_0 head on AVX-512 VNNI: 16 rows per pass, one zmm lane per row for the float steps of
// head_q8.h's order; the integer sums by vpdpbusd on ymm (AVX512VL), two 8-row halves reduced as
// in head_q8_body.h. The row tail (< 16) runs 8-row passes, then the scalar reference.
#include "kernels/head_q8_body.h"

namespace nvfp4::kern {
namespace {
struct Dot512 {
  static __m256i dot(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }
};
}  // namespace

void head_q8_avx512vnni(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  const int64_t per = kQ8Block / 32;
  int64_t r = r_b;
  for (; r + 16 <= r_e; r += 16) {
    for (int64_t t = 0; t < a.n; ++t) {
      __m512 acc = _mm512_setzero_ps();
      for (int64_t b = 0; b < a.blocks; ++b) {
        __m512 s = _mm512_setzero_ps();
        const int64_t j1 = std::min(w.blocks, (b + 1) * per);
        for (int64_t j = b * per; j < j1; ++j) {
          const __m256i av = act_block(a, j, t);
          const __m512i is = _mm512_inserti64x4(_mm512_castsi256_si512(isum8<Dot512>(w, r, j, av)),
                                                isum8<Dot512>(w, r + 8, j, av), 1);
          const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.scales(j) + r)));
          s = _mm512_add_ps(s, _mm512_mul_ps(dw, _mm512_cvtepi32_ps(is)));
        }
        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(a.d[static_cast<size_t>(t * a.blocks + b)]), s));
      }
      _mm512_storeu_ps(y + t * w.n_out + r, acc);
    }
  }
  if (r < r_e) head_rows8<Dot512>(w, a, r, r_e, y);
}

}  // namespace nvfp4::kern
