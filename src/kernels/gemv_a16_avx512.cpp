// a16 on AVX-512: 16 rows x up to 4 columns per pass; float32 FMA within each 16-value group,
// then acc += e4m3(s) * group, y = scale2 * acc (the reference's nesting, another summation order
// inside the group: within the derived bound of FP64, not bit-pinned).
#include "kernels/gemv_float_avx512.h"

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

template <int NC>
void tile_pass(const Packed& w, const float* x, int64_t tile, int64_t c0, float* y) {
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
  const uint8_t* p = w.tile(tile);
  for (int64_t g = 0; g < w.groups; ++g, p += kRecordBytes) {
    __m512 f[16];
    f512::decode(p, f);
    const __m512 sc = f512::e4m3_ps(p + 128);
    for (int c = 0; c < NC; ++c) {
      const float* xg = x + (c0 + c) * w.n_in + g * kGroup;
      __m512 s0 = _mm512_mul_ps(f[0], _mm512_set1_ps(xg[f512::kElem[0]]));
      __m512 s1 = _mm512_mul_ps(f[1], _mm512_set1_ps(xg[f512::kElem[1]]));
      for (int i = 2; i < 16; i += 2) {
        s0 = _mm512_fmadd_ps(f[i], _mm512_set1_ps(xg[f512::kElem[i]]), s0);
        s1 = _mm512_fmadd_ps(f[i + 1], _mm512_set1_ps(xg[f512::kElem[i + 1]]), s1);
      }
      acc[c] = _mm512_fmadd_ps(sc, _mm512_add_ps(s0, s1), acc[c]);
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  for (int c = 0; c < NC; ++c) {
    _mm512_mask_storeu_ps(y + (c0 + c) * w.n_out + r0, keep, _mm512_mul_ps(_mm512_set1_ps(w.scale2), acc[c]));
  }
}

}  // namespace

void gemv_a16_avx512(const Packed& w, const float* x, int64_t n, int64_t tb, int64_t te, float* y) {
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
