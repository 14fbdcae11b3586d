// The integer-exact FP8 layer on AVX-512 VNNI + VBMI (order, planes and layout derived in fp8_q8.h):
// one zmm lane per row of a 16-row group. A 64-byte unit (16 rows x 4 E4M3 bytes) gives its three
// exponent planes by vpermi2b on the bytes' low 7 bits and its sign mask by vpmovb2m; per column,
// the 4 activation bytes broadcast to every lane, negated where the weight is negative, and three
// vpdpbusd. At each 256-block's end T = A + 32 B + 1024 C per lane in i64, then the float steps of
// fp8_q8.h per lane. Up to 4 columns share each unit's planes.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/fp8_q8.h"
#include "kernels/fp8_q8_factors_avx512.h"

namespace nvfp4::kern {
namespace {

struct PlaneTables {
  alignas(64) uint8_t p[3][128];
};
constexpr PlaneTables make_planes() {
  PlaneTables t{};
  for (int idx = 0; idx < 128; ++idx) {
    const int e = idx >> 3, f = idx & 7;
    const int m = e ? 8 + f : f, sh = e ? e - 1 : 0;
    const int k = sh <= 4 ? 0 : sh <= 9 ? 1 : 2;
    t.p[k][idx] = static_cast<uint8_t>(m << (sh - 5 * k));
  }
  return t;
}
constexpr PlaneTables kPlanes = make_planes();

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// T columns; S accumulator sets (units alternate between them): vpdpbusd's latency (5 cycles) would
// otherwise bound one column's three chains to a unit every 5 cycles. MX: MXFP8, the planes
// closed every 32 inputs (fp8_q8.h); 128 x 128 blocks the same way.
template <int T, int S, bool MX>
void group_cols(const Fp8Q8& w, const ActQ8& a, const int8_t* qc, int64_t g, int64_t t0, __mmask16 mask, float* y) {
  const __m512i ta0 = _mm512_load_si512(kPlanes.p[0]), ta1 = _mm512_load_si512(kPlanes.p[0] + 64);
  const __m512i tb0 = _mm512_load_si512(kPlanes.p[1]), tb1 = _mm512_load_si512(kPlanes.p[1] + 64);
  const __m512i tc0 = _mm512_load_si512(kPlanes.p[2]), tc1 = _mm512_load_si512(kPlanes.p[2] + 64);
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512i sa[S][T], sb[S][T], sc[S][T];
    for (int k = 0; k < S; ++k)
      for (int t = 0; t < T; ++t) sa[k][t] = sb[k][t] = sc[k][t] = _mm512_setzero_si512();
    __m512 smx[T];  // MX: the block's float sum of its 32-blocks
    for (int t = 0; t < T; ++t) smx[t] = _mm512_setzero_ps();
    const int64_t j0 = b * (kQ8Block / kGroup), j1 = std::min<int64_t>(a.groups, (b + 1) * (kQ8Block / kGroup));
    for (int64_t j = j0; j < j1; ++j) {  // 16 inputs: 4 units
      const int8_t* qa[T];
      for (int t = 0; t < T; ++t) qa[t] = qc + (t0 + t) * w.n_in + j * kGroup;
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const uint8_t* p = w.unit(g, 4 * j + k);
        fp8_prefetch_unit(p);
        const __m512i v = _mm512_loadu_si512(p);
        const __mmask64 neg = _mm512_movepi8_mask(v);
        const __m512i pa = _mm512_permutex2var_epi8(ta0, v, ta1);
        const __m512i pb = _mm512_permutex2var_epi8(tb0, v, tb1);
        const __m512i pc = _mm512_permutex2var_epi8(tc0, v, tc1);
        #pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m512i q = _mm512_set1_epi32(load4(qa[t] + 4 * k));
          const __m512i qs = _mm512_mask_sub_epi8(q, neg, _mm512_setzero_si512(), q);
          sa[k % S][t] = _mm512_dpbusd_epi32(sa[k % S][t], pa, qs);
          sb[k % S][t] = _mm512_dpbusd_epi32(sb[k % S][t], pb, qs);
          sc[k % S][t] = _mm512_dpbusd_epi32(sc[k % S][t], pc, qs);
        }
      }
      if constexpr (MX) {
        if (j % 2 == 1) {  // a 32-block closed: T_j = A + 32 B + 1024 C in int32 (|T_j| < 2^30)
          const __m512 f32 = fp8_factors_avx512(w, g, j / 2);
          for (int t = 0; t < T; ++t) {
            for (int k = 1; k < S; ++k) {
              sa[0][t] = _mm512_add_epi32(sa[0][t], sa[k][t]);
              sb[0][t] = _mm512_add_epi32(sb[0][t], sb[k][t]);
              sc[0][t] = _mm512_add_epi32(sc[0][t], sc[k][t]);
            }
            const __m512i Tj = _mm512_add_epi32(_mm512_add_epi32(sa[0][t], _mm512_slli_epi32(sb[0][t], 5)), _mm512_slli_epi32(sc[0][t], 10));
            smx[t] = _mm512_add_ps(smx[t], _mm512_mul_ps(_mm512_cvtepi32_ps(Tj), f32));
            for (int k = 0; k < S; ++k) sa[k][t] = sb[k][t] = sc[k][t] = _mm512_setzero_si512();
          }
        }
      }
    }
    if constexpr (MX) {
      for (int t = 0; t < T; ++t) {
        const size_t at = static_cast<size_t>((t0 + t) * a.blocks + b);
        if (!a.zero[at]) acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(smx[t], _mm512_set1_ps(a.d[at])));
      }
      continue;
    }
    for (int t = 0; t < T; ++t) {
      const size_t at = static_cast<size_t>((t0 + t) * a.blocks + b);
      if (a.zero[at]) continue;
      for (int k = 1; k < S; ++k) {  // integers: any order
        sa[0][t] = _mm512_add_epi32(sa[0][t], sa[k][t]);
        sb[0][t] = _mm512_add_epi32(sb[0][t], sb[k][t]);
        sc[0][t] = _mm512_add_epi32(sc[0][t], sc[k][t]);
      }
      const __m512i x = _mm512_add_epi32(sa[0][t], _mm512_slli_epi32(sb[0][t], 5));
      const __m512i c32 = sc[0][t];
      const __m512i lo = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(x)),
                                          _mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(c32)), 10));
      const __m512i hi = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(x, 1)),
                                          _mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(c32, 1)), 10));
      __m512 c = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtepi64_ps(lo)), _mm512_cvtepi64_ps(hi), 1);
      c = _mm512_mul_ps(c, _mm512_set1_ps(0x1p-9f));
      c = _mm512_mul_ps(c, _mm512_set1_ps(a.d[at]));
      acc[t] = _mm512_add_ps(acc[t], c);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * w.n_out + g * kFp8RowPad, mask, acc[t]);
}

using GroupFn = void (*)(const Fp8Q8&, const ActQ8&, const int8_t*, int64_t, int64_t, __mmask16, float*);

template <bool MX, int... T>
constexpr std::array<GroupFn, sizeof...(T)> group_fns(std::integer_sequence<int, T...>) {
  return {&group_cols<T + 1, (T + 1 <= 2 ? 2 : 1), MX>...};
}

}  // namespace

void fp8_q8_avx512vnni(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  constexpr int kMaxCols = 4;
  constexpr auto fns_pt = group_fns<false>(std::make_integer_sequence<int, kMaxCols>{});
  constexpr auto fns_mx = group_fns<true>(std::make_integer_sequence<int, kMaxCols>{});
  const auto& fns = w.scaled() ? fns_mx : fns_pt;
  // Each column's codes contiguous (ActQ8 interleaves 8 columns' groups: 16 bytes in each 128 a
  // column would take a line of L1 per 16 inputs, which long rows' streams then evict).
  std::vector<int8_t> qc(static_cast<size_t>(a.n * w.n_in));
  for (int64_t t = 0; t < a.n; ++t)
    for (int64_t j = 0; j < a.groups; ++j) std::memcpy(qc.data() + t * w.n_in + j * kGroup, a.qg(j, t), kGroup);
  for (int64_t g = r_b / kFp8RowPad; g * kFp8RowPad < r_e; ++g) {
    const int64_t lo = std::max<int64_t>(r_b - g * kFp8RowPad, 0), hi = std::min<int64_t>(r_e - g * kFp8RowPad, kFp8RowPad);
    const __mmask16 m = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
    for (int64_t t0 = 0; t0 < a.n; t0 += kMaxCols)
      fns[static_cast<size_t>(std::min<int64_t>(kMaxCols, a.n - t0) - 1)](w, a, qc.data(), g, t0, m, y);
  }
}

}  // namespace nvfp4::kern
