// The integer-exact FP8 layer on AVX2 (order and layout derived in fp8_q8.h). A ymm holds 2 rows x
// 4 inputs of a unit. Each E4M3 byte widens exactly to value * 2^-8 (its bits placed in an F16:
// h = (b + (b & 0x80)) << 7 moves the sign to bit 15, then vcvtph2ps); times the column's q * 2^17
// (the 4 activation values, both 128-bit halves) that is W q exactly, an integer below 2^25 with at
// most 12 significant bits, so vcvttps2dq keeps it exactly; int32 lanes add at most 64 products
// of a 256-block (< 2^31). At the block's end each row's 4 lanes add up in i64 to T, then the
// float steps of fp8_q8.h. Half a group and up to 2 columns, or a quarter and up to 4, a pass
// keep 8 accumulators in the 16 ymm.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/fp8_q8.h"

namespace nvfp4::kern {
namespace {

// Column t's 4P rows' 32-block sums T_j in row order: each row's 4 int32 lanes added (integers: any
// order; |T_j| < 2^30). s[k] holds rows 2k and 2k + 1 (4 lanes each); hadd pairs them to
// [r0 r2 r4 r6 | r1 r3 r5 r7] (P = 2) or [r0 r2 r0 r2 | r1 r3 r1 r3] (P = 1), then a lane permute.
template <int P>
inline __m256i row_sums(const __m256i* s) {
  if constexpr (P == 2) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  } else {
    const __m256i h1 = _mm256_hadd_epi32(s[0], s[1]);
    return _mm256_permutevar8x32_epi32(_mm256_hadd_epi32(h1, h1), _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
  }
}

// The 4P rows' factors of 32-block j32 from row lane0 of group g (Fp8Q8::factor: 128 x 128
// blocks' as stored; MXFP8's E8M0 bits, byte 0 the subnormal 2^-127, times 2^-9); lanes past 4P
// zero.
template <int P>
inline __m256 row_factors(const Fp8Q8& w, int64_t g, int64_t j32, int64_t lane0) {
  if (!w.bs.empty()) {
    const float* f = w.b128_factors(g, j32) + lane0;
    if constexpr (P == 2) return _mm256_loadu_ps(f);
    else return _mm256_zextps128_ps256(_mm_loadu_ps(f));
  }
  uint64_t v = 0;
  std::memcpy(&v, w.mx_scales(g, j32) + lane0, 4 * P);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(v)));
  __m256i bits = _mm256_blendv_epi8(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000),
                                    _mm256_cmpeq_epi32(e, _mm256_setzero_si256()));
  // (P = 1: the 4 unused lanes zeroed before the product; as the subnormal 2^-127 of a zero byte
  // they would take a microcode assist every 32-block.)
  if constexpr (P == 1) bits = _mm256_blend_epi32(bits, _mm256_setzero_si256(), 0xF0);
  return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p-9f));
}

// P pieces of 4 rows (P = 1: a quarter of group g, 16 bytes of each unit; P = 2: a half, 32 bytes)
// from row base = 4 * P * part, for T columns whose inputs times 2^17 are qf[t] (n_in floats
// each): per unit and piece, 4 rows x 4 inputs widen into two ymm, and the column's 4 values
// broadcast to both halves. 2 P T accumulators: P = 2 with T <= 2 (one or two columns: each unit's
// line is read twice, from L1), P = 1 with T <= 4 (wider windows: a quarter's widening serves 4).
// MX: MXFP8 or 128 x 128 blocks, each row's 4 lanes closed every 32 inputs (8 units) into T_j, then
// the float steps of fp8_q8.h.
template <int P, int T, bool MX>
void piece_cols(const Fp8Q8& w, const ActQ8& a, int64_t g, int part, int64_t t0, const float* const* qf, int lo, int hi, float* y) {
  float acc[T][4 * P] = {};
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m256i s[T][2 * P];
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < 2 * P; ++k) s[t][k] = _mm256_setzero_si256();
    __m256 smx[T];  // MX: rows' float sums of the block's 32-blocks (lanes past 4P unused)
    for (int t = 0; t < T; ++t) smx[t] = _mm256_setzero_ps();
    const int64_t u0 = b * (kQ8Block / 4), u1 = std::min<int64_t>(w.units, (b + 1) * (kQ8Block / 4));
    #pragma GCC unroll 4
    for (int64_t u = u0; u < u1; ++u) {
      const uint8_t* p = w.unit(g, u) + part * 16 * P;
      if (part == 0) __builtin_prefetch(p + kFp8PrefetchBytes, 0, 3);
      __m256 q[T];
      for (int t = 0; t < T; ++t) q[t] = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(qf[t] + 4 * u));
      #pragma GCC unroll 2
      for (int k = 0; k < P; ++k) {
        __m256i h = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k)));
        h = _mm256_slli_epi16(_mm256_add_epi16(h, _mm256_and_si256(h, _mm256_set1_epi16(0x80))), 7);
        const __m256 w0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
        const __m256 w1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
        for (int t = 0; t < T; ++t) {
          s[t][2 * k] = _mm256_add_epi32(s[t][2 * k], _mm256_cvttps_epi32(_mm256_mul_ps(w0, q[t])));
          s[t][2 * k + 1] = _mm256_add_epi32(s[t][2 * k + 1], _mm256_cvttps_epi32(_mm256_mul_ps(w1, q[t])));
        }
      }
      if constexpr (MX) {
        if (u % 8 == 7) {  // a 32-block closed: f = float(T_j) * factor; s = s + f, row by row in lanes
          const __m256 fk = row_factors<P>(w, g, u / 8, part * 4 * P);
          for (int t = 0; t < T; ++t) {
            const __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(row_sums<P>(s[t])), fk);
            smx[t] = _mm256_add_ps(smx[t], f);
            for (int k = 0; k < 2 * P; ++k) s[t][k] = _mm256_setzero_si256();
          }
        }
      }
    }
    if constexpr (MX) {
      for (int t = 0; t < T; ++t) {
        const size_t at = static_cast<size_t>((t0 + t) * a.blocks + b);
        if (a.zero[at]) continue;
        alignas(32) float sm[8];
        _mm256_store_ps(sm, smx[t]);
        for (int r = 0; r < 4 * P; ++r) {
          const float c = sm[r] * a.d[at];
          acc[t][r] = acc[t][r] + c;
        }
      }
      continue;
    }
    for (int t = 0; t < T; ++t) {
      const size_t at = static_cast<size_t>((t0 + t) * a.blocks + b);
      if (a.zero[at]) continue;
      alignas(32) int32_t lanes[16 * P];
      for (int k = 0; k < 2 * P; ++k) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes + 8 * k), s[t][k]);
      for (int r = 0; r < 4 * P; ++r) {
        const int64_t T64 = int64_t{lanes[4 * r]} + lanes[4 * r + 1] + lanes[4 * r + 2] + lanes[4 * r + 3];
        float c = static_cast<float>(T64);
        c = c * 0x1p-9f;
        c = c * a.d[at];
        acc[t][r] = acc[t][r] + c;
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = lo; r < hi; ++r) y[(t0 + t) * w.n_out + g * kFp8RowPad + part * 4 * P + r] = acc[t][r];
}

using PieceFn = void (*)(const Fp8Q8&, const ActQ8&, int64_t, int, int64_t, const float* const*, int, int, float*);
constexpr PieceFn kHalf[2][2] = {{piece_cols<2, 1, false>, piece_cols<2, 2, false>}, {piece_cols<2, 1, true>, piece_cols<2, 2, true>}};
constexpr PieceFn kQuarter[2][4] = {
    {piece_cols<1, 1, false>, piece_cols<1, 2, false>, piece_cols<1, 3, false>, piece_cols<1, 4, false>},
    {piece_cols<1, 1, true>, piece_cols<1, 2, true>, piece_cols<1, 3, true>, piece_cols<1, 4, true>}};

}  // namespace

// Columns in chunks of 8 (their inputs times 2^17 as floats, 8 x n_in, converted once), then per
// group, per 2 or 4 columns, per half or quarter: the group's stream stays in L2 between passes.
void fp8_q8_avx2(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  constexpr int64_t kChunkCols = 8;
  std::vector<float> qbuf(static_cast<size_t>(std::min<int64_t>(kChunkCols, a.n) * w.n_in));
  for (int64_t c0 = 0; c0 < a.n; c0 += kChunkCols) {
    const int64_t nc = std::min<int64_t>(kChunkCols, a.n - c0);
    const float* qf[kChunkCols];
    for (int64_t t = 0; t < nc; ++t) {
      float* dst = qbuf.data() + t * w.n_in;
      for (int64_t j = 0; j < a.groups; ++j) {
        const int8_t* q = a.qg(j, c0 + t);
        for (int i = 0; i < kGroup; ++i) dst[j * kGroup + i] = static_cast<float>(q[i]) * 0x1p17f;
      }
      qf[t] = dst;
    }
    const int64_t step = nc <= 2 ? 2 : 4, rows = nc <= 2 ? 8 : 4;  // columns and rows a pass
    for (int64_t g = r_b / kFp8RowPad; g * kFp8RowPad < r_e; ++g) {
      for (int64_t t = 0; t < nc; t += step) {
        for (int part = 0; part < kFp8RowPad / rows; ++part) {
          const int64_t base = g * kFp8RowPad + part * rows;
          const int lo = static_cast<int>(std::clamp<int64_t>(r_b - base, 0, rows)), hi = static_cast<int>(std::clamp<int64_t>(r_e - base, 0, rows));
          if (lo >= hi) continue;
          const int64_t k = std::min<int64_t>(step, nc - t) - 1;
          const int mx = w.scaled() ? 1 : 0;
          (nc <= 2 ? kHalf[mx][k] : kQuarter[mx][k])(w, a, g, part, c0 + t, qf + t, lo, hi, y);
        }
      }
    }
  }
}

}  // namespace nvfp4::kern
