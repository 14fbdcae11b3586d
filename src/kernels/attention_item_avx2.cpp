// attention_item (an F16 cache widened with F16C) and swiglu compiled for avx2 (flags from the
// file name, see CMakeLists.txt).
#include <immintrin.h>

#include "kernels/attention_item.h"
#include "kernels/attention_kernels.h"
#include "kernels/pinned_exp_avx2.h"

namespace nvfp4 {
namespace {
// 16 F16 values widened with F16C (exact, as half_to_float).
inline void widen16_avx2(const uint16_t* h, float* f) {
  _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
  _mm256_storeu_ps(f + 8, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 8))));
}
}  // namespace

void attention_item_avx2(const void* item) {
  attention_item<64, 32>(*static_cast<const AttnItem*>(item), pinned::exp_shifted_avx2, widen16_avx2);
}
void attention_phase_avx2(const void* item, int phase, int64_t b, int64_t e) {
  attention_phase<64, 32>(*static_cast<const AttnItem*>(item), static_cast<AttnPhase>(phase), b, e,
                            pinned::exp_shifted_avx2, widen16_avx2);
}
void swiglu_avx2(float* g, const float* u, int64_t n) { pinned::swiglu_avx2_body(g, u, n); }
void exp_shifted_avx2(const float* s, float mx, float* out, int64_t n) { pinned::exp_shifted_avx2(s, mx, out, n); }
}  // namespace nvfp4
