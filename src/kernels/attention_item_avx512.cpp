// attention_item (an F16 or E4M3 cache widened with F16C) and swiglu compiled for avx512 (flags from the
// file name, see CMakeLists.txt).
#include <immintrin.h>

#include "kernels/attention_item.h"
#include "kernels/attention_kernels.h"
#include "kernels/pinned_exp_avx512.h"

namespace nvfp4 {
namespace {
// 16 F16 values widened with F16C (exact, as half_to_float).
// 16 float lanes, 32 zmm registers (key_chunk / dim_chunk: 128, 128, 112, 96 keys and 64
// output dimensions for groups of 1 to 4 heads).
struct ShapeAvx512 {
  static constexpr int kW = 16, kRegs = 32;
  static constexpr int64_t kKeys = 128, kDims = 64;
};
inline void widen16_avx512(const uint16_t* h, float* f) {
  _mm512_storeu_ps(f, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h))));
}
// 16 E4M3 bytes widened at mul = 256 * scale (attention_item.h): each byte's bits placed in an
// F16 (e4m3_as_half), widened with F16C, times mul.
struct WidenE4m3Avx512 {
  float mul;
  void operator()(const uint8_t* b, float* f) const {
    // Sign-extended to 16 bits and shifted left by 7: exponent and mantissa land in bits 7..13,
    // the sign's copies in bits 14..15; clearing bit 14 leaves e4m3_as_half's bits.
    const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m256i h = _mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    _mm512_storeu_ps(f, _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(mul)));
  }
};
}  // namespace

void attention_item_avx512(const void* item) {
  attention_item<ShapeAvx512, WidenE4m3Avx512>(*static_cast<const AttnItem*>(item), pinned::exp_shifted_avx512, widen16_avx512);
}
void attention_phase_avx512(const void* item, int phase, int64_t b, int64_t e) {
  attention_phase<ShapeAvx512, WidenE4m3Avx512>(*static_cast<const AttnItem*>(item), static_cast<AttnPhase>(phase), b, e,
                            pinned::exp_shifted_avx512, widen16_avx512);
}
void to_half_avx512(const float* f, uint16_t* h, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + i), _mm512_cvtps_ph(_mm512_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) h[i] = float_to_half(f[i]);
}
void swiglu_avx512(float* g, const float* u, int64_t n) { pinned::swiglu_avx512_body(g, u, n); }
void silu_avx512(float* x, int64_t n) { pinned::silu_avx512_body(x, n); }
void geglu_avx512(float* g, const float* u, int64_t n) { pinned::geglu_avx512_body(g, u, n); }
void exp_shifted_avx512(const float* s, float mx, float* out, int64_t n) { pinned::exp_shifted_avx512(s, mx, out, n); }
}  // namespace nvfp4
