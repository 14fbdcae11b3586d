// a16 on AVX2: the 16-row tile as two halves of 8 rows, up to 2 columns per pass; float32 FMA
// within each group, then acc += e4m3(s) * group, y = scale2 * acc. Within the derived bound.
#include <algorithm>

#include "kernels/gemv_float_avx2.h"
#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <int NC>
void tile_pass(const Packed& w, const float* x, int64_t tile, int64_t c0, float* y) {
  __m256 acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm256_setzero_ps();
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < w.groups; ++g, p += kRecordBytes) {
    for (int h = 0; h < 2; ++h) {
      __m256 f[16];
      f256::decode(p, h, f);
      const __m256 sc = f256::e4m3_ps(p + 128 + 8 * h);
      for (int c = 0; c < NC; ++c) {
        const float* xg = x + (c0 + c) * w.n_in + g * kGroup;
        __m256 s0 = _mm256_mul_ps(f[0], _mm256_set1_ps(xg[f256::kElem[0]]));
        __m256 s1 = _mm256_mul_ps(f[1], _mm256_set1_ps(xg[f256::kElem[1]]));
        for (int i = 2; i < 16; i += 2) {
          s0 = _mm256_fmadd_ps(f[i], _mm256_set1_ps(xg[f256::kElem[i]]), s0);
          s1 = _mm256_fmadd_ps(f[i + 1], _mm256_set1_ps(xg[f256::kElem[i + 1]]), s1);
        }
        acc[c][h] = _mm256_fmadd_ps(sc, _mm256_add_ps(s0, s1), acc[c][h]);
      }
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  for (int c = 0; c < NC; ++c) {
    alignas(32) float out[16];
    _mm256_store_ps(out, _mm256_mul_ps(_mm256_set1_ps(w.scale2), acc[c][0]));
    _mm256_store_ps(out + 8, _mm256_mul_ps(_mm256_set1_ps(w.scale2), acc[c][1]));
    for (int r = 0; r < rows; ++r) y[(c0 + c) * w.n_out + r0 + r] = out[r];
  }
}

}  // namespace

void gemv_a16_avx2(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < n; c0 += 2) {
      if (n - c0 >= 2) tile_pass<2>(w, x, t, c0, y);
      else tile_pass<1>(w, x, t, c0, y);
    }
  }
}

}  // namespace nvfp4::kern
