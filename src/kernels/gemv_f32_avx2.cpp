// f32 on AVX2: each weight dequantized in the pinned order (e2m1 * e4m3) * scale2, then float32
// FMA dots, 8 rows x up to 2 columns per pass. Within the derived bound of FP64.
#include <algorithm>

#include "kernels/gemv_float_avx2.h"
#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <int NC>
void tile_pass(const Packed& w, const float* x, int64_t tile, int64_t c0, float* y) {
  __m256 acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  const __m256 s2 = _mm256_set1_ps(w.scale2);
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < w.groups; ++g, p += kRecordBytes) {
    for (int h = 0; h < 2; ++h) {
      __m256 f[16];
      f256::decode(p, h, f);
      const __m256 sc = f256::e4m3_ps(p + 128 + 8 * h);
      for (int i = 0; i < 16; ++i) f[i] = _mm256_mul_ps(_mm256_mul_ps(f[i], sc), s2);
      for (int c = 0; c < NC; ++c) {
        const float* xg = x + (c0 + c) * w.n_in + g * kGroup;
        for (int i = 0; i < 16; ++i) acc[c][h] = _mm256_fmadd_ps(f[i], _mm256_set1_ps(xg[f256::kElem[i]]), acc[c][h]);
      }
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  for (int c = 0; c < NC; ++c) {
    alignas(32) float out[16];
    _mm256_store_ps(out, acc[c][0]);
    _mm256_store_ps(out + 8, acc[c][1]);
    for (int r = 0; r < rows; ++r) y[(c0 + c) * w.n_out + r0 + r] = out[r];
  }
}

}  // namespace

void gemv_f32_avx2(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < n; c0 += 2) {
      if (n - c0 >= 2) tile_pass<2>(w, x, t, c0, y);
      else tile_pass<1>(w, x, t, c0, y);
    }
  }
}

}  // namespace nvfp4::kern
