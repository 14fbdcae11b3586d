// The Q8_0 head on AVX-512 VNNI (order and layout derived in head_q8.h): one zmm lane per row of a
// 16-row group, so a 64-byte unit (16 rows x 4 offset codes u = q_w + 128) and the column's 4 codes
// q_a broadcast to every lane make one vpdpbusd; 8 of them, from off_j (head_q8_off: -128 * sum
// q_a), end at isum_j exactly (integers; |partial| < 2^31), no horizontal reduction. The float
// steps follow head_q8.h per lane; the tail group (padding rows) and a partial row range are a
// masked store. Up to 8 columns share each weight load.
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

template <int T>
void group_cols16(const HeadQ8& w, const ActQ8& a, const int32_t* off, int64_t g, int64_t t0, __mmask16 m, float* y) {
  const int64_t per = kQ8Block / 32;
  __m512 acc[T];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512 s[T];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) s[t] = _mm512_setzero_ps();
    const int64_t j1 = std::min(w.blocks, (b + 1) * per);
    for (int64_t j = b * per; j < j1; ++j) {
      prefetch_head_block(w, g, j);
      const uint8_t* u = w.codes(g, j);
      __m512i is[T];
      const int8_t* qa[T][2];  // the column's two 16-code groups of block j
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        is[t] = _mm512_set1_epi32(off[(t0 + t) * w.blocks + j]);
        qa[t][0] = a.qg(2 * j, t0 + t);
        qa[t][1] = a.qg(2 * j + 1, t0 + t);
      }
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m512i uk = _mm512_loadu_si512(u + k * kHeadUnit);
        #pragma GCC unroll 8
        for (int t = 0; t < T; ++t) is[t] = _mm512_dpbusd_epi32(is[t], uk, _mm512_set1_epi32(load4(qa[t][k / 4] + k % 4 * 4)));
      }
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.scales(g, j))));
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) s[t] = _mm512_add_ps(s[t], _mm512_mul_ps(dw, _mm512_cvtepi32_ps(is[t])));
    }
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_set1_ps(a.d[static_cast<size_t>((t0 + t) * a.blocks + b)]), s[t]));
  }
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * w.n_out + g * kHeadRowPad, m, acc[t]);
}

using GroupFn = void (*)(const HeadQ8&, const ActQ8&, const int32_t*, int64_t, int64_t, __mmask16, float*);

template <int... T>
constexpr std::array<GroupFn, sizeof...(T)> group_fns(std::integer_sequence<int, T...>) {
  return {&group_cols16<T + 1>...};
}

}  // namespace

void head_q8_avx512vnni(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  constexpr int kMaxCols = 8;
  constexpr auto fns = group_fns(std::make_integer_sequence<int, kMaxCols>{});
  if (r_b >= r_e) return;
  std::vector<int32_t> off(static_cast<size_t>(a.n * w.blocks));
  head_q8_off(a, w.blocks, off.data());
  for (int64_t g = r_b / kHeadRowPad; g * kHeadRowPad < r_e; ++g) {
    const int64_t lo = std::max<int64_t>(r_b - g * kHeadRowPad, 0), hi = std::min<int64_t>(r_e - g * kHeadRowPad, kHeadRowPad);
    const __mmask16 m = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
    for (int64_t t0 = 0; t0 < a.n; t0 += kMaxCols)
      fns[static_cast<size_t>(std::min<int64_t>(kMaxCols, a.n - t0) - 1)](w, a, off.data(), g, t0, m, y);
  }
}

}  // namespace nvfp4::kern
