// The Q8_0 head's 256-bit body (order and layout derived in head_q8.h), shared by the AVX2 and
// AVX-VNNI files; each includes it under its own target flags, so everything here has internal
// linkage. A group of 16 rows is two __m256 of 8 lanes (rows 0-7 from bytes 0-31 of each 64-byte
// unit, rows 8-15 from bytes 32-63); lane r follows head_q8.h's order for its row, so the tail
// group (padding rows) and a partial row range just store fewer lanes.
//
// Integer part of one (8 rows, 32-block): 8 units, each 8 rows x 4 codes u = q_w + 128 against the
// column's 4 codes q_a broadcast to every lane; Dot::prep forms what the columns share of a weight
// load, and Dot::dot adds the 4 products per lane to an int32
// accumulator started at Dot::kOffset ? off_j (head_q8_off: -128 * sum q_a) : 0, so it ends at
// isum_j exactly (integers, any order). AVX-VNNI: vpdpbusd(u, q_a). AVX2: q_w = u ^ 0x80, then
// |q_w| (vpsignb q_w, q_w: -128 reads as the unsigned 128) times sign(q_w) * q_a (|q_a| <= 127)
// by vpmaddubsw (pairs <= 2*128*127 < 2^15: no saturation) + vpmaddwd.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/head_q8.h"

namespace nvfp4::kern {
namespace {

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Group g's lanes [lo, hi) for columns [t0, t0 + T): T columns share each weight load.
template <class Dot, int T>
void group_cols8x2(const HeadQ8& w, const ActQ8& a, const int32_t* off, int64_t g, int64_t t0, int64_t lo, int64_t hi,
                   float* y) {
  const int64_t per = kQ8Block / 32;
  __m256 acc[T][2];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m256 s[T][2];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) s[t][0] = s[t][1] = _mm256_setzero_ps();
    const int64_t j1 = std::min(w.blocks, (b + 1) * per);
    for (int64_t j = b * per; j < j1; ++j) {
      prefetch_head_block(w, g, j);
      const uint8_t* u = w.codes(g, j);
      __m256i is[T][2];
      const int8_t* qa[T][2];  // the column's two 16-code groups of block j
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        is[t][0] = is[t][1] = Dot::kOffset ? _mm256_set1_epi32(off[(t0 + t) * w.blocks + j]) : _mm256_setzero_si256();
        qa[t][0] = a.qg(2 * j, t0 + t);
        qa[t][1] = a.qg(2 * j + 1, t0 + t);
      }
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const auto u0 = Dot::prep(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + k * kHeadUnit)));
        const auto u1 = Dot::prep(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + k * kHeadUnit + 32)));
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256i av = _mm256_set1_epi32(load4(qa[t][k / 4] + k % 4 * 4));
          is[t][0] = Dot::dot(is[t][0], u0, av);
          is[t][1] = Dot::dot(is[t][1], u1, av);
        }
      }
      const uint16_t* ds = w.scales(g, j);
      const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ds)));
      const __m256 d1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ds + 8)));
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        s[t][0] = _mm256_add_ps(s[t][0], _mm256_mul_ps(d0, _mm256_cvtepi32_ps(is[t][0])));
        s[t][1] = _mm256_add_ps(s[t][1], _mm256_mul_ps(d1, _mm256_cvtepi32_ps(is[t][1])));
      }
    }
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 da = _mm256_set1_ps(a.d[static_cast<size_t>((t0 + t) * a.blocks + b)]);
      acc[t][0] = _mm256_add_ps(acc[t][0], _mm256_mul_ps(da, s[t][0]));
      acc[t][1] = _mm256_add_ps(acc[t][1], _mm256_mul_ps(da, s[t][1]));
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    float* yt = y + (t0 + t) * w.n_out + g * kHeadRowPad;
    if (lo == 0 && hi == kHeadRowPad) {
      _mm256_storeu_ps(yt, acc[t][0]);
      _mm256_storeu_ps(yt + 8, acc[t][1]);
    } else {
      alignas(32) float tmp[kHeadRowPad];
      _mm256_store_ps(tmp, acc[t][0]);
      _mm256_store_ps(tmp + 8, acc[t][1]);
      std::copy(tmp + lo, tmp + hi, yt + lo);
    }
  }
}

using GroupFn = void (*)(const HeadQ8&, const ActQ8&, const int32_t*, int64_t, int64_t, int64_t, int64_t, float*);

template <class Dot, int... T>
constexpr std::array<GroupFn, sizeof...(T)> group_fns8x2(std::integer_sequence<int, T...>) {
  return {&group_cols8x2<Dot, T + 1>...};
}

// Rows [r_b, r_e): every 16-row group they touch, columns in tiles of up to Dot::kCols.
template <class Dot>
void head_rows16(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  constexpr int kMaxCols = Dot::kCols;
  constexpr auto fns = group_fns8x2<Dot>(std::make_integer_sequence<int, kMaxCols>{});
  if (r_b >= r_e) return;
  std::vector<int32_t> off(Dot::kOffset ? static_cast<size_t>(a.n * w.blocks) : 0);
  if (Dot::kOffset) head_q8_off(a, w.blocks, off.data());
  for (int64_t g = r_b / kHeadRowPad; g * kHeadRowPad < r_e; ++g) {
    const int64_t lo = std::max<int64_t>(r_b - g * kHeadRowPad, 0), hi = std::min<int64_t>(r_e - g * kHeadRowPad, kHeadRowPad);
    for (int64_t t0 = 0; t0 < a.n; t0 += kMaxCols)
      fns[static_cast<size_t>(std::min<int64_t>(kMaxCols, a.n - t0) - 1)](w, a, off.data(), g, t0, lo, hi, y);
  }
}

}  // namespace
}  // namespace nvfp4::kern
