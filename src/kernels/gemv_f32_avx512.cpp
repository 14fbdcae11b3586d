// f32 on AVX-512: each weight dequantized in the pinned order (e2m1 * e4m3) * scale2, then a
// float32 FMA dot (another summation order than the reference: within the derived bound of FP64).
#include "kernels/gemv_float_avx512.h"

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <int NC>
void tile_pass(const Packed& w, const float* x, int64_t tile, int64_t c0, float* y) {
  __m512 acc[NC][2];
  for (int c = 0; c < NC; ++c) acc[c][0] = acc[c][1] = _mm512_setzero_ps();
  const __m512 s2 = _mm512_set1_ps(w.scale2);
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < w.groups; ++g, p += kRecordBytes) {
    __m512 f[16];
    f512::decode(p, f);
    const __m512 sc = f512::e4m3_ps(p + 128);
    for (int i = 0; i < 16; ++i) f[i] = _mm512_mul_ps(_mm512_mul_ps(f[i], sc), s2);
    for (int c = 0; c < NC; ++c) {
      const float* xg = x + (c0 + c) * w.n_in + g * kGroup;
      for (int i = 0; i < 16; i += 2) {
        acc[c][0] = _mm512_fmadd_ps(f[i], _mm512_set1_ps(xg[f512::kElem[i]]), acc[c][0]);
        acc[c][1] = _mm512_fmadd_ps(f[i + 1], _mm512_set1_ps(xg[f512::kElem[i + 1]]), acc[c][1]);
      }
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  for (int c = 0; c < NC; ++c) {
    _mm512_mask_storeu_ps(y + (c0 + c) * w.n_out + r0, keep, _mm512_add_ps(acc[c][0], acc[c][1]));
  }
}

}  // namespace

void gemv_f32_avx512(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < n; c0 += 4) {
      switch (std::min<int64_t>(4, n - c0)) {
        case 4: tile_pass<4>(w, x, t, c0, y); break;
        case 3: tile_pass<3>(w, x, t, c0, y); break;
        case 2: tile_pass<2>(w, x, t, c0, y); break;
        default: tile_pass<1>(w, x, t, c0, y); break;
      }
    }
  }
}

}  // namespace nvfp4::kern
