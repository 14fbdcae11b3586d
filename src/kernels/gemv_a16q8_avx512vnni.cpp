// a16q8 on AVX-512 VNNI: 16 output rows x a window of up to 8 columns per pass, each packed weight
// record (16 rows x 16 values, see packed.h) decoded once per pass; one column (decode) runs two
// tiles per pass, their record streams side by side (pair_pass).
//
// Why the result equals the reference bit for bit:
//  - group sum s = -12*sum(q) + sum_j u_j*q_j with u = e2m1_q1 + 12 (vpdpbusd, int32, exact:
//    |s| <= 16*12*127 = 24384, so s also fits int16);
//  - T = sum_g s_g * q9_g over a 256-block is an exact integer, formed one of two ways, chosen
//    per tile and block by the summary built with the packed stream (Packed::emin / narrow):
//    wide: s * q9 in float32 is exact (15 + 4 significant bits), the 16 products summed in
//      float64 (integers below 2^37: exact);
//    narrow (the usual case): write q9 = M * 2^E (M <= 15, E <= 14) and let emin be the row's
//      smallest E among its nonzero scales in the block; when every row's E - emin <= 7,
//      mult = M << (E - emin) <= 1920 (k = E - emin = e saturating-minus (1 + emin), 0 for
//      subnormal and zero bytes; M = v - 8 * max(e - 1, 0)) and
//      S = sum_g s_g * mult_g stays below 16 * 24384 * 1920 < 2^30: exact int32 (vpdpwssd of s's
//      low half by mult, its high half by 0; in windows of 2+ columns, groups g and g+1 share one
//      vpdpwssd: s_g in each lane's low word, s_(g+1) in its high one, their multipliers likewise,
//      the same integer terms, 36 VNNI instructions a record pair per column instead of 40:
//      prompts +3-5%, BENCHMARKS 26), and T = S * 2^emin;
//  - float(T) * 2^-10: wide: vcvtpd2ps then the multiply; narrow: vcvtdq2ps(S) * 2^(Emin-10).
//    Scaling by a power of two commutes with rounding to float (no overflow/underflow here), so
//    both give the reference's float(T) * 2^-10 (int64 -> float rounds to nearest even);
//  - then the pinned steps c * d, c * scale2, acc + c, one lane per row, blocks ascending, zero
//    blocks skipped; y = half(acc) by vcvtps2ph (round to nearest even).
// Thread count and window size only choose which rows/columns a pass computes, never the order.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"
#include "kernels/vnni_bcast_avx512.h"

namespace nvfp4::kern {

namespace {

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

// mult = M << (E - emin) for 16 scale bytes (0 for byte 0) in int32 lanes; base = 1 + emin.
// 8E = 8 * max(e - 1, 0) by vpshufb on e (<= 15; the lane's upper bytes index entry 0 = 0); the
// saturating 16-bit subtraction acts on the low halves (the high ones are 0 - 0).
inline __m512i scale_mult(const uint8_t* s16, __m512i base) {
  const __m512i e8 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112));
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)));
  const __m512i e = _mm512_srli_epi32(v, 3);
  return _mm512_sllv_epi32(_mm512_sub_epi32(v, _mm512_shuffle_epi8(e8, e)), _mm512_subs_epu16(e, base));
}

struct Decoded {
  __m512i w0, w1, w2, w3;
};
inline Decoded decode(const uint8_t* p, __m512i lut) {
  const __m512i p0 = _mm512_loadu_si512(p), p1 = _mm512_loadu_si512(p + 64);
  return {_mm512_permutexvar_epi8(p0, lut), _mm512_permutexvar_epi8(_mm512_srli_epi16(p0, 4), lut),
          _mm512_permutexvar_epi8(p1, lut), _mm512_permutexvar_epi8(_mm512_srli_epi16(p1, 4), lut)};
}
// 2^(emin - 10) as float bits: (emin - 10 + 127) << 23.
inline __m512 pow2_minus10(__m512i emin) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(emin, _mm512_set1_epi32(117)), 23));
}
// The group sum s of one column. Windows of 5-8 columns (prompts) take the activations as
// vpdpbusd's embedded broadcast (vnni_bcast_avx512.h: prompts 1.03-1.04x); windows of 1-4 columns
// (decode, whose tiles run in pairs and share each broadcast) keep separate ones: with the embedded
// ones the pair loop measured 1.10x from cache but 0.95x from DRAM on the Zen 4 guest, no clear
// gain where decode runs (BENCHMARKS 46).
template <int NC>
inline __m512i group_sum(const Decoded& d, const int8_t* qg, int32_t corr) {
  __m512i s = _mm512_set1_epi32(corr);
  if constexpr (NC >= 5) {
    s = dpbusd_bcst(s, d.w0, qg);
    s = dpbusd_bcst(s, d.w1, qg + 4);
    s = dpbusd_bcst(s, d.w2, qg + 8);
    return dpbusd_bcst(s, d.w3, qg + 12);
  } else {
    s = _mm512_dpbusd_epi32(s, d.w0, _mm512_set1_epi32(load4(qg)));
    s = _mm512_dpbusd_epi32(s, d.w1, _mm512_set1_epi32(load4(qg + 4)));
    s = _mm512_dpbusd_epi32(s, d.w2, _mm512_set1_epi32(load4(qg + 8)));
    return _mm512_dpbusd_epi32(s, d.w3, _mm512_set1_epi32(load4(qg + 12)));
  }
}

// Block b of one tile, columns [c0, c0 + NC): t[c] = float(T) * 2^-10 (see above); p walks the
// block's records.
template <int NC, class Pf>
inline void block_narrow(const Packed& w, const ActQ8& a, int64_t tile, int64_t b, int64_t c0,
                         const uint8_t*& p, __m512 t[NC]) {
  const __m512i lut = lut64();
  constexpr int64_t qstride = ActQ8::kChunk * kGroup;  // c0 .. c0+NC lie in one chunk
  const int64_t g0 = b * kBlockGroups, g_end = std::min<int64_t>(a.groups, g0 + kBlockGroups);
  const int8_t* qb = a.qg(g0, c0);
  const int32_t* cb = a.corrg(g0, c0);
  const __m512i emin = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.emin_at(tile, b))));
  const __m512i base = _mm512_add_epi32(emin, _mm512_set1_epi32(1));
  __m512i acc_i[NC];
  for (int c = 0; c < NC; ++c) acc_i[c] = _mm512_setzero_si512();
  int64_t g = g0;
  if constexpr (NC >= 2) {
    // Groups in pairs: one vpdpwssd applies both groups' multipliers, s_g in each lane's low
    // word and s_(g+1) in its high word (both fit int16; the same integer S).
    for (; g + 1 < g_end; g += 2, p += 2 * kRecordBytes, qb += 2 * qstride, cb += 2 * ActQ8::kChunk) {
      prefetch_record<Pf>(p);
      prefetch_record<Pf>(p + kRecordBytes);
      const Decoded d0 = decode(p, lut), d1 = decode(p + kRecordBytes, lut);
      const __m512i mult = _mm512_or_si512(scale_mult(p + 128, base),
                                           _mm512_slli_epi32(scale_mult(p + kRecordBytes + 128, base), 16));
      for (int c = 0; c < NC; ++c) {
        const __m512i s0 = group_sum<NC>(d0, qb + c * kGroup, cb[c]);
        const __m512i s1 = group_sum<NC>(d1, qb + qstride + c * kGroup, cb[ActQ8::kChunk + c]);
        const __m512i s = _mm512_mask_blend_epi16(0xAAAAAAAAu, s0, _mm512_slli_epi32(s1, 16));
        acc_i[c] = _mm512_dpwssd_epi32(acc_i[c], s, mult);
      }
    }
  }
  for (; g < g_end; ++g, p += kRecordBytes, qb += qstride, cb += ActQ8::kChunk) {
    prefetch_record<Pf>(p);
    const Decoded d = decode(p, lut);
    const __m512i mult = scale_mult(p + 128, base);
    for (int c = 0; c < NC; ++c) {
      acc_i[c] = _mm512_dpwssd_epi32(acc_i[c], group_sum<NC>(d, qb + c * kGroup, cb[c]), mult);
    }
  }
  for (int c = 0; c < NC; ++c) t[c] = _mm512_mul_ps(_mm512_cvtepi32_ps(acc_i[c]), pow2_minus10(emin));
}

template <int NC, class Pf>
inline void block_wide(const ActQ8& a, int64_t b, int64_t c0, const uint8_t*& p, __m512 t[NC]) {
  const __m512i lut = lut64();
  constexpr int64_t qstride = ActQ8::kChunk * kGroup;
  const int64_t g0 = b * kBlockGroups, g_end = std::min<int64_t>(a.groups, g0 + kBlockGroups);
  const int8_t* qb = a.qg(g0, c0);
  const int32_t* cb = a.corrg(g0, c0);
  __m512d tl[NC], th[NC];
  for (int c = 0; c < NC; ++c) tl[c] = th[c] = _mm512_setzero_pd();
  for (int64_t g = g0; g < g_end; ++g, p += kRecordBytes, qb += qstride, cb += ActQ8::kChunk) {
    prefetch_record<Pf>(p);
    const Decoded d = decode(p, lut);
    const __m512 sc = q9_ps(p + 128);
    for (int c = 0; c < NC; ++c) {
      const __m512 pr = _mm512_mul_ps(_mm512_cvtepi32_ps(group_sum<NC>(d, qb + c * kGroup, cb[c])), sc);
      tl[c] = _mm512_add_pd(tl[c], _mm512_cvtps_pd(_mm512_castps512_ps256(pr)));
      th[c] = _mm512_add_pd(th[c], _mm512_cvtps_pd(_mm512_extractf32x8_ps(pr, 1)));
    }
  }
  for (int c = 0; c < NC; ++c) {
    t[c] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(tl[c])), _mm512_cvtpd_ps(th[c]), 1);
    t[c] = _mm512_mul_ps(t[c], _mm512_set1_ps(0x1p-10f));
  }
}

// The pinned steps of block b for columns [c0, c0 + NC): acc[c] += t[c] * d * scale2.
template <int NC>
inline void add_block(const Packed& w, const ActQ8& a, int64_t b, int64_t c0, const __m512 t[NC], float (*acc)[16]) {
  for (int c = 0; c < NC; ++c) {
    const int64_t col = c0 + c;
    if (a.zero[col * a.blocks + b]) continue;
    __m512 v = _mm512_mul_ps(t[c], _mm512_set1_ps(a.d[col * a.blocks + b]));
    v = _mm512_mul_ps(v, _mm512_set1_ps(w.scale2));
    _mm512_store_ps(acc[c], _mm512_add_ps(_mm512_load_ps(acc[c]), v));
  }
}

// y = half(acc) for the tile's rows, columns [c0, c0 + NC).
template <int NC>
inline void store_tile(const Packed& w, int64_t tile, int64_t c0, const float (*acc)[16], float* y) {
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  for (int c = 0; c < NC; ++c) {
    const __m256i h = _mm512_cvtps_ph(_mm512_load_ps(acc[c]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(y + (c0 + c) * w.n_out + r0, keep, _mm512_cvtph_ps(h));
  }
}

// One tile, columns [c0, c0 + NC).
template <int NC, class Pf>
void tile_pass(const Packed& w, const ActQ8& a, int64_t tile, int64_t c0, float* y) {
  alignas(64) float acc[NC][16] = {};
  const uint8_t* p = w.tile(tile);
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512 t[NC];
    if (w.narrow_at(tile, b) == 3) {
      block_narrow<NC, Pf>(w, a, tile, b, c0, p, t);
    } else {
      block_wide<NC, Pf>(a, b, c0, p, t);
    }
    add_block<NC>(w, a, b, c0, t, acc);
  }
  store_tile<NC>(w, tile, c0, acc, y);
}

// Tiles `tile` and `tile + 1`, columns [c0, c0 + NC) (decode and small windows): where both
// tiles' block is narrow, one loop walks their two record streams side by side and loads each
// group's activations once for both tiles. Measured on the SPR-class guest of BENCHMARKS 15 (one
// core, weights in DRAM): 1.2-1.4x the stream rate of one tile at a time, which left the core
// waiting on memory and computing by turns. Each tile's integer sums and float steps are
// tile_pass's, so the bits are the same.
template <int NC, class Pf, bool Short>
void pair_pass(const Packed& w, const ActQ8& a, int64_t tile, int64_t c0, float* y) {
  const __m512i lut = lut64();
  alignas(64) float acc[2][NC][16] = {};
  const uint8_t* p[2] = {w.tile(tile), w.tile(tile + 1)};
  const int64_t stride = w.groups * kRecordBytes;
  const uint8_t* end[2] = {p[0] + stride, p[1] + stride};
  constexpr int64_t qstride = ActQ8::kChunk * kGroup;
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m512 t[2][NC];
    if (w.narrow_at(tile, b) == 3 && w.narrow_at(tile + 1, b) == 3) {
      const int64_t g0 = b * kBlockGroups, g_end = std::min<int64_t>(a.groups, g0 + kBlockGroups);
      const int8_t* qb = a.qg(g0, c0);
      const int32_t* cb = a.corrg(g0, c0);
      __m512i emin[2], base[2], acc_i[2][NC];
      for (int u = 0; u < 2; ++u) {
        emin[u] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.emin_at(tile + u, b))));
        base[u] = _mm512_add_epi32(emin[u], _mm512_set1_epi32(1));
        for (int c = 0; c < NC; ++c) acc_i[u][c] = _mm512_setzero_si512();
      }
      for (int64_t g = g0; g < g_end; ++g, qb += qstride, cb += ActQ8::kChunk) {
        Decoded d[2];
        __m512i mult[2];
        for (int u = 0; u < 2; ++u) {
          prefetch_record_paired<Pf, Short>(p[u], end[u], stride);
          d[u] = decode(p[u], lut);
          mult[u] = scale_mult(p[u] + 128, base[u]);
          p[u] += kRecordBytes;
        }
        for (int c = 0; c < NC; ++c) {
          const int8_t* q = qb + c * kGroup;
          const __m512i corr = _mm512_set1_epi32(cb[c]);
          const __m512i q0 = _mm512_set1_epi32(load4(q)), q1 = _mm512_set1_epi32(load4(q + 4));
          const __m512i q2 = _mm512_set1_epi32(load4(q + 8)), q3 = _mm512_set1_epi32(load4(q + 12));
          for (int u = 0; u < 2; ++u) {
            __m512i s = _mm512_dpbusd_epi32(corr, d[u].w0, q0);
            s = _mm512_dpbusd_epi32(s, d[u].w1, q1);
            s = _mm512_dpbusd_epi32(s, d[u].w2, q2);
            s = _mm512_dpbusd_epi32(s, d[u].w3, q3);
            acc_i[u][c] = _mm512_dpwssd_epi32(acc_i[u][c], s, mult[u]);
          }
        }
      }
      for (int u = 0; u < 2; ++u) {
        for (int c = 0; c < NC; ++c) t[u][c] = _mm512_mul_ps(_mm512_cvtepi32_ps(acc_i[u][c]), pow2_minus10(emin[u]));
      }
    } else {
      for (int u = 0; u < 2; ++u) {
        if (w.narrow_at(tile + u, b) == 3) {
          block_narrow<NC, Pf>(w, a, tile + u, b, c0, p[u], t[u]);
        } else {
          block_wide<NC, Pf>(a, b, c0, p[u], t[u]);
        }
      }
    }
    for (int u = 0; u < 2; ++u) add_block<NC>(w, a, b, c0, t[u], acc[u]);
  }
  for (int u = 0; u < 2; ++u) store_tile<NC>(w, tile + u, c0, acc[u], y);
}

using PassFn = void (*)(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf>
constexpr PassFn kPass[9] = {nullptr,              tile_pass<1, Pf>, tile_pass<2, Pf>, tile_pass<3, Pf>,
                             tile_pass<4, Pf>,     tile_pass<5, Pf>, tile_pass<6, Pf>, tile_pass<7, Pf>,
                             tile_pass<8, Pf>};
template <class Pf, bool Short>
constexpr PassFn kPair[5] = {nullptr, pair_pass<1, Pf, Short>, pair_pass<2, Pf, Short>, pair_pass<3, Pf, Short>, pair_pass<4, Pf, Short>};

}  // namespace

// Windows: per tile, the columns in passes of at most 8 (a 14336-wide tile record stream is
// 126 KiB, so the second pass of N = 16 reads it from L2, not DRAM).
template <class Pf>
void gemv_a16q8_avx512vnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  if (a.n <= 4) {  // decode and small windows: tiles in pairs
    int64_t t = tb;
    const PassFn pair = w.groups * kRecordBytes < Pf::kFar ? kPair<Pf, true>[a.n] : kPair<Pf, false>[a.n];
    for (; t + 2 <= te; t += 2) pair(w, a, t, 0, y);
    if (t < te) kPass<Pf>[a.n](w, a, t, 0, y);
    return;
  }
  for (int64_t t = tb; t < te; ++t) {
    for (int64_t c0 = 0; c0 < a.n; c0 += 8) {
      const int nc = static_cast<int>(std::min<int64_t>(8, a.n - c0));
      kPass<Pf>[nc](w, a, t, c0, y);
    }
  }
}

// Prefill (N >= 32): blocked like a GEMM. The window is cut into column blocks whose int8
// activations fit in L2 (about 1 MiB: 256 columns of 4096); for each block every tile of this
// thread is streamed once and run over the block in passes of 8 columns (the tile's records,
// 36 KiB at n_in 4096, stay in L1/L2 across those passes). Without the blocking, every tile
// would re-read all N columns' activations (2 MiB at N = 512) from beyond L2. The arithmetic
// per (row, column) is the window kernel's, so the bits are the reference's.
template <class Pf>
void gemm_a16q8_avx512vnni(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  const int64_t cb = std::max<int64_t>(8, ((int64_t{1} << 20) / std::max<int64_t>(1, a.n_in)) / 8 * 8);
  for (int64_t b0 = 0; b0 < a.n; b0 += cb) {
    const int64_t b1 = std::min<int64_t>(a.n, b0 + cb);
    for (int64_t t = tb; t < te; ++t) {
      for (int64_t c0 = b0; c0 < b1; c0 += 8) {
        const int nc = static_cast<int>(std::min<int64_t>(8, b1 - c0));
        kPass<Pf>[nc](w, a, t, c0, y);
      }
    }
  }
}

template void gemv_a16q8_avx512vnni<PrefetchL1>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemv_a16q8_avx512vnni<PrefetchL1L2>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemm_a16q8_avx512vnni<PrefetchL1>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemm_a16q8_avx512vnni<PrefetchL1L2>(const Packed&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
