// The integer-exact FP8 layer on AVX2 (order and layout derived in fp8_q8.h). A ymm holds 2 rows x
// 4 inputs of a unit. Each E4M3 byte widens exactly to value * 2^-8 (its bits placed in an F16:
// h = (b + (b & 0x80)) << 7 moves the sign to bit 15, then vcvtph2ps); times the column's q * 2^17
// (the 4 activation bytes, both 128-bit halves) that is W q exactly, an integer below 2^25 with at
// most 12 significant bits, so vcvttps2dq keeps it exactly; int32 lanes add at most 64 products
// of a 256-block (< 2^31). At the block's end each row's 4 lanes add up in i64 to T, then the
// float steps of fp8_q8.h. Half a group (8 rows) and up to 2 columns a pass keep 8 accumulators
// in the 16 ymm; the group's stream stays in L2 between passes.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/fp8_q8.h"

namespace nvfp4::kern {
namespace {

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The column's 4 activation bytes as floats times 2^17, in both halves.
inline __m256 q_times_2p17(const int8_t* q) {
  const __m128 f = _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(load4(q)))), _mm_set1_ps(0x1p17f));
  return _mm256_set_m128(f, f);
}

template <int T>
void half_cols(const Fp8Q8& w, const ActQ8& a, int64_t g, int half, int64_t t0, int lo, int hi, float* y) {
  float acc[T][8] = {};
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m256i s[T][4];
    for (int t = 0; t < T; ++t)
      for (int p = 0; p < 4; ++p) s[t][p] = _mm256_setzero_si256();
    const int64_t j0 = b * (kQ8Block / kGroup), j1 = std::min<int64_t>(a.groups, (b + 1) * (kQ8Block / kGroup));
    for (int64_t j = j0; j < j1; ++j) {  // 16 inputs: 4 units
      const int8_t* qa[T];
      for (int t = 0; t < T; ++t) qa[t] = a.qg(j, t0 + t);
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const uint8_t* p = w.unit(g, 4 * j + k) + half * 32;
        __builtin_prefetch(p + kFp8PrefetchBytes, 0, 3);
        __m256 qf[T];
        for (int t = 0; t < T; ++t) qf[t] = q_times_2p17(qa[t] + 4 * k);
        #pragma GCC unroll 2
        for (int piece = 0; piece < 2; ++piece) {
          __m256i h = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * piece)));
          h = _mm256_slli_epi16(_mm256_add_epi16(h, _mm256_and_si256(h, _mm256_set1_epi16(0x80))), 7);
          const __m256 w0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
          const __m256 w1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
          for (int t = 0; t < T; ++t) {
            s[t][2 * piece] = _mm256_add_epi32(s[t][2 * piece], _mm256_cvttps_epi32(_mm256_mul_ps(w0, qf[t])));
            s[t][2 * piece + 1] = _mm256_add_epi32(s[t][2 * piece + 1], _mm256_cvttps_epi32(_mm256_mul_ps(w1, qf[t])));
          }
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      const size_t at = static_cast<size_t>((t0 + t) * a.blocks + b);
      if (a.zero[at]) continue;
      alignas(32) int32_t lanes[32];
      for (int p = 0; p < 4; ++p) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes + 8 * p), s[t][p]);
      for (int r = 0; r < 8; ++r) {
        const int64_t T64 = int64_t{lanes[4 * r]} + lanes[4 * r + 1] + lanes[4 * r + 2] + lanes[4 * r + 3];
        float c = static_cast<float>(T64);
        c = c * 0x1p-9f;
        c = c * a.d[at];
        acc[t][r] = acc[t][r] + c;
      }
    }
  }
  for (int t = 0; t < T; ++t)
    for (int r = lo; r < hi; ++r) y[(t0 + t) * w.n_out + g * kFp8RowPad + half * 8 + r] = acc[t][r];
}

}  // namespace

void fp8_q8_avx2(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  for (int64_t g = r_b / kFp8RowPad; g * kFp8RowPad < r_e; ++g) {
    for (int64_t t0 = 0; t0 < a.n; t0 += 2) {
      for (int half = 0; half < 2; ++half) {
        const int64_t base = g * kFp8RowPad + half * 8;
        const int lo = static_cast<int>(std::clamp<int64_t>(r_b - base, 0, 8)), hi = static_cast<int>(std::clamp<int64_t>(r_e - base, 0, 8));
        if (lo >= hi) continue;
        if (a.n - t0 >= 2) half_cols<2>(w, a, g, half, t0, lo, hi, y);
        else half_cols<1>(w, a, g, half, t0, lo, hi, y);
      }
    }
  }
}

}  // namespace nvfp4::kern
