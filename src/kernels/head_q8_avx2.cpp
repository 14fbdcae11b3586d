// The Q8_0 head on AVX2 (vpmaddubsw + vpmaddwd; derivation in head_q8.h and head_q8_body.h).
#include "kernels/head_q8_body.h"

namespace nvfp4::kern {
namespace {
struct DotAvx2 {
  // Columns per weight load: up to 4 share each load's q_w and |q_w| (a Zen 3 core, one thread:
  // 2-8 columns in 0.61-0.83x the time of one column at a time, one column within 3%;
  // docs/BENCHMARKS.md section 54).
  static constexpr int kCols = 4;
  static constexpr bool kOffset = false;
  struct Codes {
    __m256i qw, mag;  // q_w, and |q_w| as unsigned bytes: shared by the columns of a load
  };
  static Codes prep(__m256i u) {
    const __m256i qw = _mm256_xor_si256(u, _mm256_set1_epi8(static_cast<char>(0x80)));
    return {qw, _mm256_sign_epi8(qw, qw)};
  }
  static __m256i dot(__m256i acc, const Codes& c, __m256i qa) {
    const __m256i p = _mm256_maddubs_epi16(c.mag, _mm256_sign_epi8(qa, c.qw));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
  }
};
}  // namespace

void head_q8_avx2(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  head_rows16<DotAvx2>(w, a, r_b, r_e, y);
}

}  // namespace nvfp4::kern
