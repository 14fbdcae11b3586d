// PinnedDense on AVX-512: the 16 lanes in one register; multiply and add unfused; the tiled
// layout of pinned_dense.h (a tile of 8 rows per pass for one token, half a tile for 2+).
#include <immintrin.h>

#include <algorithm>

#include "kernels/pinned_dense.h"

namespace nvfp4::pinned_dense_detail {

namespace {
inline float reduce16(__m512 v) {
  // l + (l+8), then l + (l+4), l + (l+2), l + (l+1): the order of the scalar code.
  __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_maskz_extractf32x8_ps(__mmask8(0xFF), v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  __m128 d = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
  return _mm_cvtss_f32(d);
}
// 16 weights from k as float (lanes off m: 0): F16 by vcvtph2ps, BF16 by moving its bits to the
// top of a float (exact), F32 as stored.
// Element k of the stored weights, as a byte address (for prefetch).
template <int E>
inline const void* elem_ptr(const void* w, int64_t k) {
  return static_cast<const char*>(w) + k * (E == kF32 ? 4 : 2);
}
template <int E>
inline __m512 load_w(const void* w, int64_t k, __mmask16 m) {
  if constexpr (E == kF16) {
    return _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_mask_loadu_epi16(_mm256_setzero_si256(), m, static_cast<const uint16_t*>(w) + k));
  } else if constexpr (E == kBF16) {
    const __m256i b = _mm256_mask_loadu_epi16(_mm256_setzero_si256(), m, static_cast<const uint16_t*>(w) + k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
  } else {
    return _mm512_mask_loadu_ps(_mm512_setzero_ps(), m, static_cast<const float*>(w) + k);
  }
}
// Rows [r, r + R) of one tile (r % R == 0, R dividing kTile) for every token. Each row's sum keeps
// the one pinned order (16 lanes, i ascending); blocking rows only adds independent chains. A
// whole tile (R = kTile) reads one stream and prefetches it ahead (TileAhead): a decode step
// reads the head once, from beyond the caches.
template <int E, int R>
void block(const void* w, int64_t n_in, const float* x, int64_t n, float* y, int64_t n_out, int64_t r) {
  const int64_t full = n_in & ~int64_t{15};
  const int64_t base = tiled_at(r, 0, n_in);  // row r's first chunk; row r + k's is 16 k further
  const TileAhead<E == kF32 ? 4 : 2> next(elem_ptr<E>(w, base - (r % kTile) * 16));
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * n_in;
    __m512 acc[R];
    for (int k = 0; k < R; ++k) acc[k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < full; i += 16) {
      if (R == kTile && t == 0) next.at(i);
      const __m512 xv = _mm512_loadu_ps(xt + i);
      const int64_t c = base + i * kTile;  // chunk i / 16: 16 * kTile elements each
      for (int k = 0; k < R; ++k) acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(load_w<E>(w, c + 16 * k, __mmask16(0xFFFF)), xv));
    }
    if (i < n_in) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n_in - i)) - 1);
      const __m512 xv = _mm512_mask_loadu_ps(_mm512_setzero_ps(), m, xt + i);
      const int64_t c = base + i * kTile;
      for (int k = 0; k < R; ++k) acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(load_w<E>(w, c + 16 * k, m), xv));
    }
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(acc[k]);
  }
}
// Rows [r, r + R) of one tile for T tokens side by side (verify steps and prompts' heads: 2-4
// tokens): each row's 16 weights are read and widened once for the T tokens, then multiplied and
// added into each token's own accumulator, so every (row, token) sum keeps the pinned order and
// the bits of block<E, R>. On the Qwen3.6-27B head (49152 x 5120 F16, two threads) four tokens
// took 1.94x one token's time when each token widened the weights again. R = 4 (half a tile; the
// second half reads the tile from cache) and T <= 4 keep 16 accumulators, 4 activations and the
// weights in the 32 zmm.
template <int E, int R, int T>
void block_tokens(const void* w, int64_t n_in, int64_t n_out, const float* x, float* y, int64_t r,
                  bool ahead) {
  const int64_t full = n_in & ~int64_t{15};
  const int64_t base = tiled_at(r, 0, n_in);
  const TileAhead<E == kF32 ? 4 : 2> next(elem_ptr<E>(w, base - (r % kTile) * 16));
  __m512 acc[T][R];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) acc[t][k] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i < full; i += 16) {
    if (ahead) next.at(i);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + t * n_in + i);
    const int64_t c = base + i * kTile;
    for (int k = 0; k < R; ++k) {
      const __m512 wv = load_w<E>(w, c + 16 * k, __mmask16(0xFFFF));
      for (int t = 0; t < T; ++t) acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(wv, xv[t]));
    }
  }
  if (i < n_in) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n_in - i)) - 1);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_mask_loadu_ps(_mm512_setzero_ps(), m, x + t * n_in + i);
    const int64_t c = base + i * kTile;
    for (int k = 0; k < R; ++k) {
      const __m512 wv = load_w<E>(w, c + 16 * k, m);
      for (int t = 0; t < T; ++t) acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(wv, xv[t]));
    }
  }
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(acc[t][k]);
}
// Rows [r, r + 4) for every token, in groups of up to 4 tokens; the first half of a tile
// prefetches the tile's stream for both halves.
template <int E>
void block_many(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y, int64_t r) {
  for (int64_t t = 0; t < n; t += 4) {
    const float* xt = x + t * n_in;
    float* yt = y + t * n_out;
    const bool ahead = t == 0 && r % kTile == 0;
    switch (std::min<int64_t>(4, n - t)) {
      case 4: block_tokens<E, 4, 4>(w, n_in, n_out, xt, yt, r, ahead); break;
      case 3: block_tokens<E, 4, 3>(w, n_in, n_out, xt, yt, r, ahead); break;
      case 2: block_tokens<E, 4, 2>(w, n_in, n_out, xt, yt, r, ahead); break;
      default: block_tokens<E, 4, 1>(w, n_in, n_out, xt, yt, r, ahead); break;
    }
  }
}
template <int E>
void rows(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y,
          int64_t r0, int64_t r1) {
  int64_t r = r0;
  for (; r < r1 && r % kTile != 0; ++r) block<E, 1>(w, n_in, x, n, y, n_out, r);
  if (n >= 2) {
    for (; r + 4 <= r1; r += 4) block_many<E>(w, n_in, n_out, x, n, y, r);
  } else {
    for (; r + kTile <= r1; r += kTile) block<E, kTile>(w, n_in, x, n, y, n_out, r);
  }
  for (; r < r1; ++r) block<E, 1>(w, n_in, x, n, y, n_out, r);
}
}  // namespace

void rows_avx512(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x, int64_t n,
                 float* y, int64_t r0, int64_t r1) {
  if (elem == kF16) rows<kF16>(w, n_in, n_out, x, n, y, r0, r1);
  else if (elem == kBF16) rows<kBF16>(w, n_in, n_out, x, n, y, r0, r1);
  else rows<kF32>(w, n_in, n_out, x, n, y, r0, r1);
}

}  // namespace nvfp4::pinned_dense_detail
