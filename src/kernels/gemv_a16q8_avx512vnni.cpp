// a16q8 on AVX-512 VNNI: 16 output rows x a window of up to 8 columns per pass, each packed weight
// record (16 rows x 16 values, see packed.h) decoded once per pass.
//
// Why the result equals the reference bit for bit:
//  - group sum s = -12*sum(q) + sum_j u_j*q_j with u = e2m1_q1 + 12 (vpdpbusd, int32, exact:
//    |partial sums| <= 16*24*127);
//  - s * e4m3_q9(scale) in float32 is exact: |s| <= 24384 needs 15 bits, the scale's q9 has a
//    4-bit mantissa (or is an integer <= 7), so the product has <= 19 significant bits;
//  - the 16 products of a 256-block are summed in float64: integers below 2^37, exact, so
//    this is T of the reference whatever the order;
//  - float(T) by vcvtpd2ps (round to nearest even, as the reference's int64 -> float), then the
//    pinned steps c = T*2^-10, c*d, c*scale2, acc + c, one vector lane per row, blocks ascending,
//    zero blocks skipped; y = half(acc) by vcvtps2ph (round to nearest even).
// Thread count and window size only choose which rows/columns a pass computes, never the order.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"

namespace nvfp4::kern {

namespace {

inline constexpr int64_t kPrefetch = 8192;  // bytes ahead in the weight stream (N >= 2)

// e4m3_q9 of 16 scale bytes as exact floats: normal bytes (e >= 1) are (1 + m/8) * 2^(e+2), i.e.
// float bits (v << 20) + (129 << 23); subnormal bytes (v < 8) are the integer m = v.
inline __m512 q9_ps(const uint8_t* s16) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)));
  const __m512 normal =
      _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(v, 20), _mm512_set1_epi32(129 << 23)));
  const __mmask16 sub = _mm512_cmplt_epu32_mask(v, _mm512_set1_epi32(8));
  return _mm512_mask_cvtepi32_ps(normal, sub, v);
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// The 64-entry byte table of vpermb: kU12 four times, so that an index's bits 4-5 (the other
// nibble, or the neighbour's bits after vpsrlw) do not matter: the low nibble decodes without a
// mask, the high one after one shift.
inline __m512i lut64() {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU12)));
}

// One tile, columns [c0, c0 + NC).
template <int NC>
void tile_pass(const Packed& w, const ActQ8& a, int64_t tile, int64_t c0, float* y) {
  const __m512i lut = lut64();
  alignas(64) float acc[NC][16] = {};
  const uint8_t* p = w.tile(tile);
  const float s2 = w.scale2;
  const int64_t qstride = a.n * kGroup;
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int64_t g0 = b * (kQ8Block / kGroup);
    const int64_t g_end = std::min<int64_t>(a.groups, g0 + kQ8Block / kGroup);
    __m512d tl[NC], th[NC];
    for (int c = 0; c < NC; ++c) tl[c] = th[c] = _mm512_setzero_pd();
    const int8_t* qb = a.qg(g0, c0);
    const int32_t* cb = a.corrg(g0, c0);
    for (int64_t g = g0; g < g_end; ++g, p += kRecordBytes, qb += qstride, cb += a.n) {
      if constexpr (NC >= 2) {
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch + 128), _MM_HINT_T0);
      }
      const __m512i p0 = _mm512_loadu_si512(p), p1 = _mm512_loadu_si512(p + 64);
      const __m512i w0 = _mm512_permutexvar_epi8(p0, lut);
      const __m512i w1 = _mm512_permutexvar_epi8(_mm512_srli_epi16(p0, 4), lut);
      const __m512i w2 = _mm512_permutexvar_epi8(p1, lut);
      const __m512i w3 = _mm512_permutexvar_epi8(_mm512_srli_epi16(p1, 4), lut);
      const __m512 sc = q9_ps(p + 128);
      for (int c = 0; c < NC; ++c) {
        const int8_t* qg = qb + c * kGroup;
        __m512i s = _mm512_set1_epi32(cb[c]);
        s = _mm512_dpbusd_epi32(s, w0, _mm512_set1_epi32(load4(qg)));
        s = _mm512_dpbusd_epi32(s, w1, _mm512_set1_epi32(load4(qg + 4)));
        s = _mm512_dpbusd_epi32(s, w2, _mm512_set1_epi32(load4(qg + 8)));
        s = _mm512_dpbusd_epi32(s, w3, _mm512_set1_epi32(load4(qg + 12)));
        const __m512 pr = _mm512_mul_ps(_mm512_cvtepi32_ps(s), sc);  // exact (see top)
        tl[c] = _mm512_add_pd(tl[c], _mm512_cvtps_pd(_mm512_castps512_ps256(pr)));
        th[c] = _mm512_add_pd(th[c], _mm512_cvtps_pd(_mm512_extractf32x8_ps(pr, 1)));
      }
    }
    for (int c = 0; c < NC; ++c) {
      const int64_t col = c0 + c;
      if (a.zero[col * a.blocks + b]) continue;
      __m512 t = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(tl[c])),
                                    _mm512_cvtpd_ps(th[c]), 1);
      t = _mm512_mul_ps(t, _mm512_set1_ps(0x1p-10f));
      t = _mm512_mul_ps(t, _mm512_set1_ps(a.d[col * a.blocks + b]));
      t = _mm512_mul_ps(t, _mm512_set1_ps(s2));
      _mm512_store_ps(acc[c], _mm512_add_ps(_mm512_load_ps(acc[c]), t));
    }
  }
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  for (int c = 0; c < NC; ++c) {
    const __m256i h = _mm512_cvtps_ph(_mm512_load_ps(acc[c]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(y + (c0 + c) * w.n_out + r0, keep, _mm512_cvtph_ps(h));
  }
}

using PassFn = void (*)(const Packed&, const ActQ8&, int64_t, int64_t, float*);
constexpr PassFn kPass[9] = {nullptr,         tile_pass<1>, tile_pass<2>, tile_pass<3>, tile_pass<4>,
                             tile_pass<5>,    tile_pass<6>, tile_pass<7>, tile_pass<8>};

}  // namespace

// Windows: per tile, the columns in passes of at most 8 (a 14336-wide tile record stream is
// 126 KiB, so the second pass of N = 16 reads it from L2, not DRAM).
void gemv_a16q8_avx512vnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < a.n; c0 += 8) {
      const int nc = static_cast<int>(std::min<int64_t>(8, a.n - c0));
      kPass[nc](w, a, t, c0, y);
    }
  }
}

// Prefill (N >= 32): blocked like a GEMM. The window is cut into column blocks whose int8
// activations fit in L2 (about 1 MiB: 128 columns of 4096); for each block every tile of this
// thread is streamed once and run over the block in passes of 8 columns (the tile's records,
// 36 KiB at n_in 4096, stay in L1/L2 across those passes). Without the blocking, every tile
// would re-read all N columns' activations (2 MiB at N = 512) from beyond L2. The arithmetic
// per (row, column) is the window kernel's, so the bits are the reference's.
void gemm_a16q8_avx512vnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  const int64_t cb = std::max<int64_t>(8, ((int64_t{1} << 20) / std::max<int64_t>(1, a.n_in)) / 8 * 8);
  for (int64_t b0 = 0; b0 < a.n; b0 += cb) {
    const int64_t b1 = std::min<int64_t>(a.n, b0 + cb);
    for (int64_t t = tb; t < te; ++t) {
      for (int64_t c0 = b0; c0 < b1; c0 += 8) {
        const int nc = static_cast<int>(std::min<int64_t>(8, b1 - c0));
        kPass[nc](w, a, t, c0, y);
      }
    }
  }
}

}  // namespace nvfp4::kern
