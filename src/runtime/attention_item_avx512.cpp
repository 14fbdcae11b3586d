// attention_item and swiglu compiled for avx512 (flags from the file name, see CMakeLists.txt).
#include "runtime/attention.h"
#include "runtime/attention_item.h"
#include "runtime/pinned_exp_avx512.h"

namespace nvfp4 {
void attention_item_avx512(const void* item) {
  attention_item<128, 64>(*static_cast<const AttnItem*>(item), pinned::exp_shifted_avx512);
}
void attention_phase_avx512(const void* item, int phase, int64_t b, int64_t e) {
  attention_phase<128, 64>(*static_cast<const AttnItem*>(item), static_cast<AttnPhase>(phase), b, e,
                            pinned::exp_shifted_avx512);
}
void swiglu_avx512(float* g, const float* u, int64_t n) { pinned::swiglu_avx512_body(g, u, n); }
void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n) { pinned::exp_shifted_avx512(s, mx, out, n); }
void f16_to_f32_avx512(const uint16_t* h, float* f, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(f + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
  f16_to_f32_scalar(h + i, f + i, n - i);
}
}  // namespace nvfp4
