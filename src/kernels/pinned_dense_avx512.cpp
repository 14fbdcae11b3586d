// PinnedDense on AVX-512: the 16 lanes in one register; multiply and add unfused.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"
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
// R rows for every token. Each row's sum keeps the one pinned order (16 lanes, i ascending);
// blocking rows only adds independent chains and memory streams. Each row is prefetched ahead
// (RowAhead): a decode step reads the head once, from beyond the caches.
template <class Pf, int E, int R>
void block(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y,
           int64_t r) {
  const int64_t full = n_in & ~int64_t{15};
  const RowAhead<R, E == kF32 ? 4 : 2, Pf> next(w, n_in, n_out, r);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * n_in;
    __m512 acc[R];
    for (int k = 0; k < R; ++k) acc[k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < full; i += 16) {
      if (t == 0) next.at(i);
      const __m512 xv = _mm512_loadu_ps(xt + i);
      for (int k = 0; k < R; ++k)
        acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(load_w<E>(w, (r + k) * n_in + i, __mmask16(0xFFFF)), xv));
    }
    if (i < n_in) {
      const __mmask16 m = static_cast<__mmask16>((1u << (n_in - i)) - 1);
      const __m512 xv = _mm512_mask_loadu_ps(_mm512_setzero_ps(), m, xt + i);
      for (int k = 0; k < R; ++k)
        acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(load_w<E>(w, (r + k) * n_in + i, m), xv));
    }
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(acc[k]);
  }
}
// R rows for T tokens side by side (verify steps and prompts' heads: 2-4 tokens): each row's 16
// weights are read and widened once for the T tokens, then multiplied and added into each token's
// own accumulator, so every (row, token) sum keeps the pinned order and the bits of block().
// On the Qwen3.6-27B head (49152 x 5120 F16, two threads) four tokens took 1.94x one token's time
// when each token widened the weights again: the widening (2 uops) and the load were per token.
// R = 6 and T <= 4 keep 24 accumulators, 4 activations and the weights in the 32 zmm.
template <class Pf, int E, int R, int T>
void block_tokens(const void* w, int64_t n_in, int64_t n_out, const float* x, float* y, int64_t r,
                  bool ahead) {
  const int64_t full = n_in & ~int64_t{15};
  const RowAhead<R, E == kF32 ? 4 : 2, Pf> next(w, n_in, n_out, r);
  __m512 acc[T][R];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) acc[t][k] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i < full; i += 16) {
    if (ahead) next.at(i);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + t * n_in + i);
    for (int k = 0; k < R; ++k) {
      const __m512 wv = load_w<E>(w, (r + k) * n_in + i, __mmask16(0xFFFF));
      for (int t = 0; t < T; ++t) acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(wv, xv[t]));
    }
  }
  if (i < n_in) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n_in - i)) - 1);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_mask_loadu_ps(_mm512_setzero_ps(), m, x + t * n_in + i);
    for (int k = 0; k < R; ++k) {
      const __m512 wv = load_w<E>(w, (r + k) * n_in + i, m);
      for (int t = 0; t < T; ++t) acc[t][k] = _mm512_add_ps(acc[t][k], _mm512_mul_ps(wv, xv[t]));
    }
  }
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(acc[t][k]);
}
// Rows [r, r + 6) for every token, in groups of up to 4 tokens.
template <class Pf, int E>
void block_many(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y, int64_t r) {
  for (int64_t t = 0; t < n; t += 4) {
    const float* xt = x + t * n_in;
    float* yt = y + t * n_out;
    switch (std::min<int64_t>(4, n - t)) {
      case 4: block_tokens<Pf, E, 6, 4>(w, n_in, n_out, xt, yt, r, t == 0); break;
      case 3: block_tokens<Pf, E, 6, 3>(w, n_in, n_out, xt, yt, r, t == 0); break;
      case 2: block_tokens<Pf, E, 6, 2>(w, n_in, n_out, xt, yt, r, t == 0); break;
      default: block_tokens<Pf, E, 6, 1>(w, n_in, n_out, xt, yt, r, t == 0); break;
    }
  }
}
template <class Pf, int E>
void rows(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y,
          int64_t r0, int64_t r1) {
  int64_t r = r0;
  if (n >= 2) {
    for (; r + 6 <= r1; r += 6) block_many<Pf, E>(w, n_in, n_out, x, n, y, r);
  } else {
    for (; r + 8 <= r1; r += 8) block<Pf, E, 8>(w, n_in, n_out, x, n, y, r);
  }
  for (; r + 4 <= r1; r += 4) block<Pf, E, 4>(w, n_in, n_out, x, n, y, r);
  for (; r < r1; ++r) block<Pf, E, 1>(w, n_in, n_out, x, n, y, r);
}
}  // namespace

template <class Pf>
void rows_avx512(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x, int64_t n,
                 float* y, int64_t r0, int64_t r1) {
  if (elem == kF16) rows<Pf, kF16>(w, n_in, n_out, x, n, y, r0, r1);
  else if (elem == kBF16) rows<Pf, kBF16>(w, n_in, n_out, x, n, y, r0, r1);
  else rows<Pf, kF32>(w, n_in, n_out, x, n, y, r0, r1);
}

template void rows_avx512<kern::PrefetchL1>(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template void rows_avx512<kern::PrefetchL1L2>(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);

}  // namespace nvfp4::pinned_dense_detail
