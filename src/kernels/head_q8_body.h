// The Q8_0 head's vector body (order derived in head_q8.h), shared by the AVX2, AVX-VNNI and
// AVX-512 files; each includes it under its own target flags, so everything here has internal
// linkage. One SIMD lane per output row: 8 rows per __m256, the row tail in the scalar reference.
//
// Integer part of one (row, 32-block): |w| (vpsignb w, w: -128 reads as the unsigned 128) times
// sign(w) * a (vpsignb a, w; |a| <= 127), either vpmaddubsw + vpmaddwd (pairs <= 2*128*127 <
// 2^15: no saturation) or vpdpbusd: 8 int32 partial sums, added in any order (integers). Then
// eight rows' partials are reduced to one int32 per row (reduce8).
#pragma once
#include <immintrin.h>

#include "kernels/head_q8.h"

namespace nvfp4::kern {
namespace {

// 8 vectors of 8 int32 -> one vector whose lane r is the sum of v[r]'s lanes.
inline __m256i reduce8(const __m256i v[8]) {
  const __m256i h01 = _mm256_hadd_epi32(v[0], v[1]);
  const __m256i h23 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i h45 = _mm256_hadd_epi32(v[4], v[5]);
  const __m256i h67 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23);  // per 128-bit half: rows 0..3
  const __m256i h4567 = _mm256_hadd_epi32(h45, h67);  // rows 4..7
  const __m256i lo = _mm256_permute2x128_si256(h0123, h4567, 0x20);
  const __m256i hi = _mm256_permute2x128_si256(h0123, h4567, 0x31);
  return _mm256_add_epi32(lo, hi);
}

// The 32 activation codes of block j of column t (two 16-value groups of ActQ8).
inline __m256i act_block(const ActQ8& a, int64_t j, int64_t t) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qg(2 * j, t)));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qg(2 * j + 1, t)));
  return _mm256_set_m128i(hi, lo);
}

// isum_j of 8 rows r0..r0+7 for activation block av: Dot::dot(|w|, sign(a, w)) -> 8 int32.
template <class Dot>
inline __m256i isum8(const HeadQ8& w, int64_t r0, int64_t j, __m256i av) {
  __m256i p[8];
  for (int k = 0; k < 8; ++k) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.row(r0 + k) + j * 32));
    p[k] = Dot::dot(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv));
  }
  return reduce8(p);
}

// Rows [r_b, r_e): 8-row passes (each lane follows head_q8.h's order), the tail in the reference.
template <class Dot>
void head_rows8(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  const int64_t per = kQ8Block / 32;
  int64_t r = r_b;
  for (; r + 8 <= r_e; r += 8) {
    for (int64_t t = 0; t < a.n; ++t) {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t b = 0; b < a.blocks; ++b) {
        __m256 s = _mm256_setzero_ps();
        const int64_t j1 = std::min(w.blocks, (b + 1) * per);
        for (int64_t j = b * per; j < j1; ++j) {
          const __m256i is = isum8<Dot>(w, r, j, act_block(a, j, t));
          const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales(j) + r)));
          s = _mm256_add_ps(s, _mm256_mul_ps(dw, _mm256_cvtepi32_ps(is)));
        }
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a.d[static_cast<size_t>(t * a.blocks + b)]), s));
      }
      _mm256_storeu_ps(y + t * w.n_out + r, acc);
    }
  }
  if (r < r_e) head_q8_scalar(w, a, r, r_e, y);
}

}  // namespace
}  // namespace nvfp4::kern
