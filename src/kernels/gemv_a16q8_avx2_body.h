#pragma once
// The body of a16q8 on AVX2 and on AVX-VNNI (vpdpbusd on 256-bit registers), included by
// gemv_a16q8_avx2.cpp (kVnni = false) and gemv_a16q8_avxvnni.cpp (kVnni = true).
//
// a16q8 on AVX2: the packed 16-row tile read as two halves of 8 rows (one int32 lane per row),
// a window of up to 8 columns per pass; each 256-block runs half by half (the second half reads
// the block's 2.3 KiB of records from L1), or both halves in one loop for windows of up to
// kBothMaxCols columns when both are narrow; one column (decode) runs tiles in pairs, the two
// record streams side by side (narrow_both_pair). Which path a half takes, and its emin, come
// from the block summary built with the packed stream (Packed::emin / narrow, see packed.h).
//
// Why the result equals the reference bit for bit (the AVX-512 kernel's argument, see
// gemv_a16q8_avx512vnni.cpp, with the group sum formed in int16):
//  - decode: u = e2m1_q1 + 12 in [0, 24] by vpshufb; vpmaddubsw(u, q) gives, per row lane, two
//    int16 pair sums |u_a q_a + u_b q_b| <= 2*24*127 = 6096 (no saturation). The four vpmaddubsw
//    of a group are added with vpaddw: int16 lane 0 of a row holds sum_A u*q over the 8 elements
//    A = {0,1,4,5,8,9,12,13}, lane 1 over the other 8 (B), each |.| <= 8*24*127 = 24384.
//  - correction: corr = -12 * sum_16 q is added to lane 0 only (the int32 broadcast of
//    ActQ8::corr16, corr's low 16 bits: |corr| <= 24384 fits int16). Then lane 0 =
//    sum_A (u-12) q - 12 sum_B q, |.| <= 8*12*127 + 12*8*127 = 24384: no wrap; and
//    lane 0 + lane 1 = s = sum_16 (u-12) q = sum_16 e2m1_q1 * q, the reference's group sum.
//  - narrow half (per 8-row half and 256-block, from the summary): q9 = M * 2^E (M <= 15; E = e-1
//    for normal bytes, 0 for subnormal ones), emin = the row's smallest E among its nonzero
//    scales; every row of the half has E - emin <= 7. Per record, in int16 words: k = E - emin =
//    e saturating-minus (1 + emin) (0 for subnormal and zero bytes, whose emin is 0 or M is 0),
//    M = v - 8 * max(e - 1, 0) (8E by vpshufb on e), 2^k (<= 128) by vpshufb, and
//    mult = 2^k * M <= 1920 by vpmaddubsw (the word's high bytes: 2^0 * 0: M's is 0).
//    vpmaddwd of the int16 pair (lane 0, lane 1) by
//    (mult, mult) gives s * mult exactly (each product <= 24384 * 1920 < 2^26).
//    S = sum_g s_g * mult_g <= 16 * 24384 * 1920 < 2^30: exact int32, and T = S * 2^emin.
//    float(T) * 2^-10 = vcvtdq2ps(S) * 2^(emin - 10) (a power of two commutes with rounding; no
//    overflow or underflow).
//  - wide half (scales spanning more than 7 binades): s = vpmaddwd(pair, 1) in int32,
//    s * q9 exact in float32 (15 + 4 significant bits), summed in float64 (integers below 2^37:
//    exact), vcvtpd2ps (round to nearest even, as the reference's int64 -> float), times 2^-10.
//  - then the pinned steps c * d, c * scale2, acc + c, one lane per row, blocks ascending, zero
//    blocks skipped; y = half(acc) by vcvtps2ph (round to nearest even).
// VNNI: the group sum s is formed in int32 by vpdpbusd from corr (exact: |s| <= 24384, see
// above), so it fits int16 with its high half the sign; vpdpwssd by (mult, 0) adds s * mult to S
// exactly, and the wide path uses s as it is: the same integers as the AVX2 path.
// Windows, column blocks and threads only choose which rows/columns a pass computes, never the
// order of the float steps, so every N and thread count gives the same bits.
#include <immintrin.h>

#include <algorithm>

#include "kernels/packed.h"

// Internal linkage (an anonymous namespace): each including file gets its own copy, compiled with
// its own flags, and the linker never merges them.
namespace nvfp4::kern {
namespace {
namespace a16q8_avx2_body {

inline constexpr int64_t kQStride = ActQ8::kChunk * kGroup;  // one group of a chunk's 8 columns
// Windows of up to this many columns run a narrow block's two halves in one loop (narrow_both);
// wider ones half by half. Streamed weights (every layer of a step is read once), one thread:
// AVX2 on a Zen 3 core, 3 and 4 columns 0.77-0.90x the half-by-half time (docs/BENCHMARKS.md
// section 54); on a Xeon (AVX2 and AVX-VNNI) 0.75-0.98x from DRAM and L3, from L2 (matrices
// under 2 MiB called again, a reuse no forward pass makes) 0.97-1.04x at 3 columns and
// 1.08-1.12x at 4 (section 55). 5-8 columns: parity both ways.
inline constexpr int kBothMaxCols = 4;

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <class Pf>
inline void prefetch_block(const uint8_t* p, int64_t count) {
  for (int64_t g = 0; g < count; ++g, p += kRecordBytes) prefetch_record<Pf>(p);
}

// q9 of 8 scale bytes as exact floats: normal bytes (e >= 1) are (1 + m/8) * 2^(e+2), i.e. float
// bits (v << 20) + (129 << 23); subnormal bytes (v < 8) are the integer m = v.
inline __m256 q9_ps(const uint8_t* s8) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s8)));
  const __m256 normal =
      _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(v, 20), _mm256_set1_epi32(129 << 23)));
  const __m256 sub = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), v));
  return _mm256_blendv_ps(normal, _mm256_cvtepi32_ps(v), sub);
}

// 16 bytes of a tile (one per row) as int16 words ordered rows 0-3, 8-11 | 4-7, 12-15 (lane 0 |
// lane 1), so that vpunpcklwd / vpunpckhwd give rows 0-7 / 8-15 in int32 lane order.
inline __m256i row_words(const uint8_t* s16) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s16)));
  const __m256i ctl = _mm256_setr_epi8(0, -1, 1, -1, 2, -1, 3, -1, 8, -1, 9, -1, 10, -1, 11, -1,
                                       4, -1, 5, -1, 6, -1, 7, -1, 12, -1, 13, -1, 14, -1, 15, -1);
  return _mm256_shuffle_epi8(v, ctl);
}

// Per half, mult = M << (E - emin) of a record's 16 scale bytes in each row's int32 lane: as
// (mult, mult) (AVX2: the pair holds the group sum in two parts) or (mult, 0) (VNNI: the int32
// group sum fits int16, its high half the sign). base = row_words(emin) + 1. Rows whose E - emin
// exceeds 7 (a wide half's) get a meaningless mult that nothing reads.
struct Mults {
  __m256i m0, m1;
};
template <bool kVnni>
inline Mults scale_mults(const uint8_t* s16, __m256i base) {
  const __m256i v = row_words(s16);
  const __m256i e = _mm256_srli_epi16(v, 3);
  const __m256i k = _mm256_subs_epu16(e, base);
  // 8E = 8 * max(e - 1, 0) by vpshufb on e (<= 15; the word's high byte indexes entry 0 = 0).
  const __m256i e8 = _mm256_setr_epi8(0, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112,
                                      0, 0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112);
  const __m256i m = _mm256_sub_epi16(v, _mm256_shuffle_epi8(e8, e));
  const __m256i pow2 = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0,
                                        1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i mult = _mm256_maddubs_epi16(_mm256_shuffle_epi8(pow2, k), m);
  const __m256i hi = kVnni ? _mm256_setzero_si256() : mult;
  return {_mm256_unpacklo_epi16(mult, hi), _mm256_unpackhi_epi16(mult, hi)};
}

struct Decoded {
  __m256i w0, w1, w2, w3;
};
// Half h's codes of a record (ph = record + 32h): bytes [0, 32) and [64, 96) of ph.
inline Decoded decode(const uint8_t* ph) {
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kU12)));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ph));
  const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ph + 64));
  return {_mm256_shuffle_epi8(lut, _mm256_and_si256(p0, m4)),
          _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p0, 4), m4)),
          _mm256_shuffle_epi8(lut, _mm256_and_si256(p1, m4)),
          _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(p1, 4), m4))};
}

struct Bcast {
  __m256i x0, x1, x2, x3, corr;
};
inline Bcast bcast(const int8_t* qg, const int32_t* corr) {
  return {bcast4(qg), bcast4(qg + 4), bcast4(qg + 8), bcast4(qg + 12), _mm256_set1_epi32(*corr)};
}

// AVX2: the int16 pair (lane 0, lane 1) per row whose sum is the group sum s (see the header;
// x.corr holds corr16). VNNI: s itself in int32, corr + four vpdpbusd (each u*q product and sum
// exact in int32).
template <bool kVnni>
inline __m256i group_sum(const Decoded& d, const Bcast& x) {
  if constexpr (kVnni) {
    __m256i s = _mm256_dpbusd_avx_epi32(x.corr, d.w0, x.x0);
    s = _mm256_dpbusd_avx_epi32(s, d.w1, x.x1);
    s = _mm256_dpbusd_avx_epi32(s, d.w2, x.x2);
    return _mm256_dpbusd_avx_epi32(s, d.w3, x.x3);
  }
  const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(d.w0, x.x0), _mm256_maddubs_epi16(d.w1, x.x1));
  const __m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(d.w2, x.x2), _mm256_maddubs_epi16(d.w3, x.x3));
  return _mm256_add_epi16(_mm256_add_epi16(a, b), x.corr);
}

// S += s * mult, exact (see the header).
template <bool kVnni>
inline __m256i accumulate(__m256i acc, __m256i s, __m256i mult) {
  if constexpr (kVnni) return _mm256_dpwssd_avx_epi32(acc, s, mult);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(s, mult));
}

// 2^(emin - 10) of the 8 rows at e8 as float bits: (emin - 10 + 127) << 23.
inline __m256 pow2_of(const uint8_t* e8) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(e8)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(117)), 23));
}

// Narrow half h: t[c] = float(T) * 2^-10 for the 8 rows of the half of the block's records at p.
template <bool kVnni, int NC>
inline void narrow_half(const uint8_t* p, int h, int64_t count, const uint8_t* emin, const int8_t* qb,
                        const int32_t* cb, __m256 t[NC]) {
  const __m256i base = _mm256_add_epi16(row_words(emin), _mm256_set1_epi16(1));
  __m256i acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = _mm256_setzero_si256();
  for (int64_t g = 0; g < count; ++g, p += kRecordBytes, qb += kQStride, cb += ActQ8::kChunk) {
    const Decoded d = decode(p + 32 * h);
    const Mults m = scale_mults<kVnni>(p + 128, base);
    const __m256i mult = h ? m.m1 : m.m0;
    for (int c = 0; c < NC; ++c) {
      acc[c] = accumulate<kVnni>(acc[c], group_sum<kVnni>(d, bcast(qb + c * kGroup, cb + c)), mult);
    }
  }
  const __m256 pow2 = pow2_of(emin + 8 * h);
  for (int c = 0; c < NC; ++c) t[c] = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[c]), pow2);
}

// Both halves narrow, windows of up to kBothMaxCols columns (decode, a verify of 1-3 drafts): one
// loop over the block reads each record once and forms its multipliers once (half by half they
// are formed per half; the decoded half, both multipliers and 2 * NC sums fit the 16 ymm up to 4
// columns, the broadcasts reloaded per half). The same integer sums as narrow_half.
template <bool kVnni, class Pf, int NC>
inline void narrow_both(const uint8_t* p, int64_t count, const uint8_t* emin, const int8_t* qb,
                        const int32_t* cb, __m256 t[2][NC]) {
  const __m256i base = _mm256_add_epi16(row_words(emin), _mm256_set1_epi16(1));
  __m256i acc0[NC], acc1[NC];
  for (int c = 0; c < NC; ++c) acc0[c] = acc1[c] = _mm256_setzero_si256();
  for (int64_t g = 0; g < count; ++g, p += kRecordBytes, qb += kQStride, cb += ActQ8::kChunk) {
    prefetch_record<Pf>(p);
    // Half by half inside the record (the order keeps few values live: no spills at NC = 1).
    const Mults m = scale_mults<kVnni>(p + 128, base);
    const Decoded d0 = decode(p);
    for (int c = 0; c < NC; ++c) {
      acc0[c] = accumulate<kVnni>(acc0[c], group_sum<kVnni>(d0, bcast(qb + c * kGroup, cb + c)), m.m0);
    }
    const Decoded d1 = decode(p + 32);
    for (int c = 0; c < NC; ++c) {
      acc1[c] = accumulate<kVnni>(acc1[c], group_sum<kVnni>(d1, bcast(qb + c * kGroup, cb + c)), m.m1);
    }
  }
  const __m256 pow0 = pow2_of(emin), pow1 = pow2_of(emin + 8);
  for (int c = 0; c < NC; ++c) {
    t[0][c] = _mm256_mul_ps(_mm256_cvtepi32_ps(acc0[c]), pow0);
    t[1][c] = _mm256_mul_ps(_mm256_cvtepi32_ps(acc1[c]), pow1);
  }
}

// narrow_both of one column for tiles at p0 and p1 = p0 + the tile stride (decode): the two
// record streams walked side by side, each group's activation broadcasts shared by the two
// tiles. The same integer sums as narrow_both, per tile.
template <bool kVnni, class Pf, bool Short>
inline void narrow_both_pair(const uint8_t* p0, const uint8_t* p1, const uint8_t* end0, int64_t stride,
                             int64_t count, const uint8_t* emin0,
                             const uint8_t* emin1, const int8_t* qb, const int32_t* cb, __m256 t[2][2]) {
  const __m256i base0 = _mm256_add_epi16(row_words(emin0), _mm256_set1_epi16(1));
  const __m256i base1 = _mm256_add_epi16(row_words(emin1), _mm256_set1_epi16(1));
  __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00;
  for (int64_t g = 0; g < count; ++g, p0 += kRecordBytes, p1 += kRecordBytes, qb += kQStride, cb += ActQ8::kChunk) {
    prefetch_record_paired<Pf, Short>(p0, end0, stride);
    prefetch_record_paired<Pf, Short>(p1, end0 + stride, stride);
    const Bcast x = bcast(qb, cb);
    const Mults m0 = scale_mults<kVnni>(p0 + 128, base0);
    a00 = accumulate<kVnni>(a00, group_sum<kVnni>(decode(p0), x), m0.m0);
    a01 = accumulate<kVnni>(a01, group_sum<kVnni>(decode(p0 + 32), x), m0.m1);
    const Mults m1 = scale_mults<kVnni>(p1 + 128, base1);
    a10 = accumulate<kVnni>(a10, group_sum<kVnni>(decode(p1), x), m1.m0);
    a11 = accumulate<kVnni>(a11, group_sum<kVnni>(decode(p1 + 32), x), m1.m1);
  }
  t[0][0] = _mm256_mul_ps(_mm256_cvtepi32_ps(a00), pow2_of(emin0));
  t[0][1] = _mm256_mul_ps(_mm256_cvtepi32_ps(a01), pow2_of(emin0 + 8));
  t[1][0] = _mm256_mul_ps(_mm256_cvtepi32_ps(a10), pow2_of(emin1));
  t[1][1] = _mm256_mul_ps(_mm256_cvtepi32_ps(a11), pow2_of(emin1 + 8));
}

// Wide half, one column at a time (rare: its float64 sums take two registers per column).
template <bool kVnni, int NC>
inline void wide_half(const uint8_t* ph, const uint8_t* s8, int64_t count, const int8_t* qb,
                      const int32_t* cb, __m256 t[NC]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int c = 0; c < NC; ++c) {
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    for (int64_t g = 0; g < count; ++g) {
      const __m256i pair = group_sum<kVnni>(decode(ph + g * kRecordBytes),
                                            bcast(qb + g * kQStride + c * kGroup, cb + g * ActQ8::kChunk + c));
      const __m256i s = kVnni ? pair : _mm256_madd_epi16(pair, ones);
      const __m256 pr = _mm256_mul_ps(_mm256_cvtepi32_ps(s), q9_ps(s8 + g * kRecordBytes));  // exact
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(pr)));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(pr, 1)));
    }
    t[c] = _mm256_mul_ps(_mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)), _mm256_set1_ps(0x1p-10f));
  }
}

// Block b of one tile, columns [c0, c0 + NC): tt[h][c] = float(T) * 2^-10 of half h (see the
// header); p points at the block's first record.
template <bool kVnni, class Pf, int NC>
inline void block_t(const Packed& w, const ActQ8& a, int64_t tile, int64_t b, int64_t c0, const uint8_t* p,
                    __m256 tt[2][NC]) {
  const int64_t g0 = b * kBlockGroups;
  const int64_t count = std::min<int64_t>(a.groups, g0 + kBlockGroups) - g0;
  const int8_t* qb = a.qg(g0, c0);
  const int32_t* cb = kVnni ? a.corrg(g0, c0) : a.corr16g(g0, c0);  // VNNI: int32 corr, AVX2: its low half
  const uint8_t* emin = w.emin_at(tile, b);
  const int narrow = w.narrow_at(tile, b);
  if (NC <= kBothMaxCols && narrow == 3) {
    narrow_both<kVnni, Pf, NC>(p, count, emin, qb, cb, tt);
    return;
  }
  prefetch_block<Pf>(p, count);
  for (int h = 0; h < 2; ++h) {
    if (narrow & (1 << h)) {
      narrow_half<kVnni, NC>(p, h, count, emin, qb, cb, tt[h]);
    } else {
      wide_half<kVnni, NC>(p + 32 * h, p + 128 + 8 * h, count, qb, cb, tt[h]);
    }
  }
}

// The pinned steps of block b, both halves, columns [c0, c0 + NC): acc[c] += t * d * scale2.
template <int NC>
inline void add_block(const Packed& w, const ActQ8& a, int64_t b, int64_t c0, __m256 tt[2][NC], float (*acc)[16]) {
  const __m256 s2 = _mm256_set1_ps(w.scale2);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < NC; ++c) {
      const int64_t col = c0 + c;
      if (a.zero[col * a.blocks + b]) continue;
      __m256 v = _mm256_mul_ps(tt[h][c], _mm256_set1_ps(a.d[col * a.blocks + b]));
      v = _mm256_mul_ps(v, s2);
      _mm256_store_ps(acc[c] + 8 * h, _mm256_add_ps(_mm256_load_ps(acc[c] + 8 * h), v));
    }
  }
}

// y = half(acc) for the tile's rows, columns [c0, c0 + NC).
template <int NC>
inline void store_tile(const Packed& w, int64_t tile, int64_t c0, float (*acc)[16], float* y) {
  const int64_t r0 = tile * kTileRows;
  const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
  // Lane r of half h is stored when 8h + r < rows (masked stores: no copy through memory).
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int c = 0; c < NC; ++c) {
    float* yc = y + (c0 + c) * w.n_out + r0;
    for (int h = 0; h < 2; ++h) {
      const __m128i hv = _mm256_cvtps_ph(_mm256_load_ps(acc[c] + 8 * h), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      if (rows == kTileRows) {
        _mm256_storeu_ps(yc + 8 * h, _mm256_cvtph_ps(hv));
      } else {
        _mm256_maskstore_ps(yc + 8 * h, _mm256_cmpgt_epi32(_mm256_set1_epi32(rows - 8 * h), lane), _mm256_cvtph_ps(hv));
      }
    }
  }
}

// One tile, columns [c0, c0 + NC) (inside one chunk of 8).
template <bool kVnni, class Pf, int NC>
void tile_pass(const Packed& w, const ActQ8& a, int64_t tile, int64_t c0, float* y) {
  alignas(32) float acc[NC][16] = {};
  const uint8_t* p = w.tile(tile);
  for (int64_t b = 0; b < a.blocks; ++b) {
    __m256 tt[2][NC];
    block_t<kVnni, Pf, NC>(w, a, tile, b, c0, p, tt);
    add_block<NC>(w, a, b, c0, tt, acc);
    p += (std::min<int64_t>(a.groups, (b + 1) * kBlockGroups) - b * kBlockGroups) * kRecordBytes;
  }
  store_tile<NC>(w, tile, c0, acc, y);
}

// Tiles `tile` and `tile + 1`, one column (decode): where both tiles' block is narrow, their two
// record streams are walked side by side (narrow_both_pair); otherwise each tile's block as in
// tile_pass. The same bits as two tile_pass<1>. Short: tiles shorter than the far prefetch lead.
template <bool kVnni, class Pf, bool Short>
void pair_pass(const Packed& w, const ActQ8& a, int64_t tile, float* y) {
  alignas(32) float acc[2][1][16] = {};
  const uint8_t* p = w.tile(tile);
  const int64_t stride = w.tile(tile + 1) - p;
  const uint8_t* end0 = p + stride;  // tile `tile` ends where tile + 1 begins
  for (int64_t b = 0; b < a.blocks; ++b) {
    const int64_t g0 = b * kBlockGroups;
    const int64_t count = std::min<int64_t>(a.groups, g0 + kBlockGroups) - g0;
    __m256 tt[2][2][1];
    if (w.narrow_at(tile, b) == 3 && w.narrow_at(tile + 1, b) == 3) {
      __m256 t4[2][2];
      narrow_both_pair<kVnni, Pf, Short>(p, p + stride, end0, stride, count, w.emin_at(tile, b), w.emin_at(tile + 1, b), a.qg(g0, 0),
                              kVnni ? a.corrg(g0, 0) : a.corr16g(g0, 0), t4);
      for (int u = 0; u < 2; ++u) for (int h = 0; h < 2; ++h) tt[u][h][0] = t4[u][h];
    } else {
      for (int u = 0; u < 2; ++u) block_t<kVnni, Pf, 1>(w, a, tile + u, b, 0, p + u * stride, tt[u]);
    }
    for (int u = 0; u < 2; ++u) add_block<1>(w, a, b, 0, tt[u], acc[u]);
    p += count * kRecordBytes;
  }
  for (int u = 0; u < 2; ++u) store_tile<1>(w, tile + u, 0, acc[u], y);
}

using PassFn = void (*)(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <bool kVnni, class Pf>
constexpr PassFn kPass[9] = {nullptr,
                             tile_pass<kVnni, Pf, 1>, tile_pass<kVnni, Pf, 2>, tile_pass<kVnni, Pf, 3>, tile_pass<kVnni, Pf, 4>,
                             tile_pass<kVnni, Pf, 5>, tile_pass<kVnni, Pf, 6>, tile_pass<kVnni, Pf, 7>, tile_pass<kVnni, Pf, 8>};

template <bool kVnni, class Pf>
void run_window(const Packed& w, const ActQ8& a, int64_t t, int64_t c0, int64_t c1, float* y) {
  for (; c0 < c1; c0 += 8) kPass<kVnni, Pf>[std::min<int64_t>(8, c1 - c0)](w, a, t, c0, y);
}

// Decode: tiles in pairs. Small N: per tile, the columns in windows of at most 8.
template <bool kVnni, class Pf>
void gemv(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  int64_t t = tb;
  if (a.n == 1) {
    const auto pair = w.groups * kRecordBytes < Pf::kFar ? pair_pass<kVnni, Pf, true> : pair_pass<kVnni, Pf, false>;
    for (; t + 2 <= te; t += 2) pair(w, a, t, y);
  }
  for (; t < te; ++t) run_window<kVnni, Pf>(w, a, t, 0, a.n, y);
}

// Prefill (N >= kPrefillN): the columns cut into blocks whose int8 activations fit in half a
// MiB (L2 of most AVX2 cores is 0.5-2 MiB: 128 columns of 4096); for each block, every tile of
// this thread streams once and runs the block in windows of 8 (the tile's records stay in L1/L2
// across the windows). Same arithmetic per (row, column) as the decode kernel. AVX-VNNI's prefill;
// plain AVX2's is gemm_signed (gemm_a16q8_avx2_signed.h: each block decoded once per tile).
inline int64_t prefill_cols(int64_t n_in) {
  return std::max<int64_t>(8, ((int64_t{1} << 19) / std::max<int64_t>(1, n_in)) / 8 * 8);
}
template <bool kVnni, class Pf>
void gemm(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  const int64_t cb = prefill_cols(a.n_in);
  for (int64_t b0 = 0; b0 < a.n; b0 += cb) {
    const int64_t b1 = std::min<int64_t>(a.n, b0 + cb);
    for (int64_t t = tb; t < te; ++t) run_window<kVnni, Pf>(w, a, t, b0, b1, y);
  }
}

}  // namespace a16q8_avx2_body
}  // namespace
}  // namespace nvfp4::kern
