// PinnedDense on AVX2: lanes 0-7 and 8-15 in two registers; multiply and add unfused; blocks of
// 6 rows with the next block prefetched (as the AVX-512 twin's 8).
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"
#include "kernels/pinned_dense.h"

namespace nvfp4::pinned_dense_detail {

namespace {
inline float reduce16(__m256 lo, __m256 hi) {
  __m256 a = _mm256_add_ps(lo, hi);
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  __m128 d = _mm_add_ss(c, _mm_shuffle_ps(c, c, 1));
  return _mm_cvtss_f32(d);
}
// 8 values from k, zero past `valid` (0..8).
// F16 by vcvtph2ps, BF16 by moving its bits to the top of a float (exact), F32 as stored.
template <int E>
inline __m256 load_w(const void* w, int64_t k, int64_t valid) {
  const uint16_t* h = static_cast<const uint16_t*>(w) + k;
  if (valid >= 8) {
    if constexpr (E == kF16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
    } else if constexpr (E == kBF16) {
      const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    } else {
      return _mm256_loadu_ps(static_cast<const float*>(w) + k);
    }
  }
  alignas(32) float tmp[8] = {};
  for (int64_t j = 0; j < valid; ++j) {
    if constexpr (E == kF16) {
      tmp[j] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h[j])));
    } else if constexpr (E == kBF16) {
      const uint32_t bits = static_cast<uint32_t>(h[j]) << 16;
      __builtin_memcpy(&tmp[j], &bits, 4);
    } else {
      tmp[j] = static_cast<const float*>(w)[k + j];
    }
  }
  return _mm256_load_ps(tmp);
}
inline __m256 load_x(const float* x, int64_t valid) {
  if (valid >= 8) return _mm256_loadu_ps(x);
  alignas(32) float tmp[8] = {};
  for (int64_t j = 0; j < valid; ++j) tmp[j] = x[j];
  return _mm256_load_ps(tmp);
}
// R rows for every token (2R accumulators: lanes 0-7 and 8-15 of each row). Each row's sum keeps
// the one pinned order (16 lanes, i ascending; the tail's missing lanes are not added, which
// equals adding +0 to a lane that started at +0); blocking rows only adds independent chains and
// memory streams. Each row is prefetched ahead (RowAhead): a decode step reads the head once,
// from beyond the caches. R = 6 keeps the 12 accumulators and two temporaries in the 16 ymm.
template <class Pf, int E, int R>
void block(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y,
           int64_t r) {
  const int64_t full = n_in & ~int64_t{15};
  const RowAhead<R, E == kF32 ? 4 : 2, Pf> next(w, n_in, n_out, r);
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * n_in;
    __m256 lo[R], hi[R];
    for (int k = 0; k < R; ++k) lo[k] = hi[k] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i < full; i += 16) {
      if (t == 0) next.at(i);
      for (int k = 0; k < R; ++k) {
        lo[k] = _mm256_add_ps(lo[k], _mm256_mul_ps(load_w<E>(w, (r + k) * n_in + i, 8), _mm256_loadu_ps(xt + i)));
        hi[k] = _mm256_add_ps(hi[k], _mm256_mul_ps(load_w<E>(w, (r + k) * n_in + i + 8, 8), _mm256_loadu_ps(xt + i + 8)));
      }
    }
    if (i < n_in) {
      const int64_t v0 = n_in - i, v1 = n_in - i - 8;
      const __m256 x0 = load_x(xt + i, v0);
      for (int k = 0; k < R; ++k) lo[k] = _mm256_add_ps(lo[k], _mm256_mul_ps(load_w<E>(w, (r + k) * n_in + i, v0), x0));
      if (v1 > 0) {
        const __m256 x1 = load_x(xt + i + 8, v1);
        for (int k = 0; k < R; ++k) hi[k] = _mm256_add_ps(hi[k], _mm256_mul_ps(load_w<E>(w, (r + k) * n_in + i + 8, v1), x1));
      }
    }
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(lo[k], hi[k]);
  }
}
// R rows for T tokens side by side (verify steps: 2-4 tokens): each row's 16 weights are read and
// widened once for the T tokens, each token's activations read from L1 as they are multiplied, so
// every (row, token) sum keeps the pinned order and the bits of block(). R = 2 and T <= 3 keep
// the 12 accumulators and the two weight registers in the 16 ymm.
template <class Pf, int E, int R, int T>
void block_tokens(const void* w, int64_t n_in, int64_t n_out, const float* x, float* y, int64_t r,
                  bool ahead) {
  const int64_t full = n_in & ~int64_t{15};
  const RowAhead<R, E == kF32 ? 4 : 2, Pf> next(w, n_in, n_out, r);
  __m256 lo[T][R], hi[T][R];
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) lo[t][k] = hi[t][k] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i < full; i += 16) {
    if (ahead) next.at(i);
    for (int k = 0; k < R; ++k) {
      const __m256 w0 = load_w<E>(w, (r + k) * n_in + i, 8), w1 = load_w<E>(w, (r + k) * n_in + i + 8, 8);
      for (int t = 0; t < T; ++t) {
        lo[t][k] = _mm256_add_ps(lo[t][k], _mm256_mul_ps(w0, _mm256_loadu_ps(x + t * n_in + i)));
        hi[t][k] = _mm256_add_ps(hi[t][k], _mm256_mul_ps(w1, _mm256_loadu_ps(x + t * n_in + i + 8)));
      }
    }
  }
  if (i < n_in) {
    const int64_t v0 = n_in - i, v1 = n_in - i - 8;
    for (int k = 0; k < R; ++k) {
      const __m256 w0 = load_w<E>(w, (r + k) * n_in + i, v0);
      for (int t = 0; t < T; ++t) lo[t][k] = _mm256_add_ps(lo[t][k], _mm256_mul_ps(w0, load_x(x + t * n_in + i, v0)));
      if (v1 > 0) {
        const __m256 w1 = load_w<E>(w, (r + k) * n_in + i + 8, v1);
        for (int t = 0; t < T; ++t)
          hi[t][k] = _mm256_add_ps(hi[t][k], _mm256_mul_ps(w1, load_x(x + t * n_in + i + 8, v1)));
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < R; ++k) y[t * n_out + r + k] = reduce16(lo[t][k], hi[t][k]);
}
// Rows [r, r + 2) for every token, in groups of up to 3 tokens.
template <class Pf, int E>
void block_many(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y, int64_t r) {
  for (int64_t t = 0; t < n; t += 3) {
    const float* xt = x + t * n_in;
    float* yt = y + t * n_out;
    switch (std::min<int64_t>(3, n - t)) {
      case 3: block_tokens<Pf, E, 2, 3>(w, n_in, n_out, xt, yt, r, t == 0); break;
      case 2: block_tokens<Pf, E, 2, 2>(w, n_in, n_out, xt, yt, r, t == 0); break;
      default: block_tokens<Pf, E, 2, 1>(w, n_in, n_out, xt, yt, r, t == 0); break;
    }
  }
}
template <class Pf, int E>
void rows(const void* w, int64_t n_in, int64_t n_out, const float* x, int64_t n, float* y,
          int64_t r0, int64_t r1) {
  int64_t r = r0;
  if (n >= 2) {
    for (; r + 2 <= r1; r += 2) block_many<Pf, E>(w, n_in, n_out, x, n, y, r);
  } else {
    for (; r + 6 <= r1; r += 6) block<Pf, E, 6>(w, n_in, n_out, x, n, y, r);
    for (; r + 2 <= r1; r += 2) block<Pf, E, 2>(w, n_in, n_out, x, n, y, r);
  }
  for (; r < r1; ++r) block<Pf, E, 1>(w, n_in, n_out, x, n, y, r);
}
}  // namespace

template <class Pf>
void rows_avx2(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x, int64_t n,
               float* y, int64_t r0, int64_t r1) {
  if (elem == kF16) rows<Pf, kF16>(w, n_in, n_out, x, n, y, r0, r1);
  else if (elem == kBF16) rows<Pf, kBF16>(w, n_in, n_out, x, n, y, r0, r1);
  else rows<Pf, kF32>(w, n_in, n_out, x, n, y, r0, r1);
}

template void rows_avx2<kern::PrefetchL1>(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template void rows_avx2<kern::PrefetchL1L2>(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);

}  // namespace nvfp4::pinned_dense_detail
