// The Q8_0 head on AVX-VNNI (vpdpbusd on ymm over the offset codes; derivation in head_q8.h and
// head_q8_body.h).
#include "kernels/head_q8_body.h"

namespace nvfp4::kern {
namespace {
struct DotVnni {
  // Columns per weight load: 4 (a Xeon core forced to AVX-VNNI, one thread: 3, 4 and 8 columns
  // in 0.85-0.95x, 0.79-0.88x and 0.79-0.84x the time of 2 a load, 1-2 columns at parity;
  // docs/BENCHMARKS.md section 55).
  static constexpr int kCols = 4;
  static constexpr bool kOffset = true;
  static __m256i prep(__m256i u) { return u; }
  static __m256i dot(__m256i acc, __m256i u, __m256i qa) { return _mm256_dpbusd_avx_epi32(acc, u, qa); }
};
}  // namespace

void head_q8_avxvnni(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  head_rows16<DotVnni>(w, a, r_b, r_e, y);
}

}  // namespace nvfp4::kern
