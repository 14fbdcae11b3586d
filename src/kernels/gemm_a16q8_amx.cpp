// a16q8 prompts (windows of kPrefillN columns and more) on AMX-INT8 tiles: the block sums T of
// the contract (packed.h, kernels_ref.h dot_a16q8_ref) as TDPBSSD products of the activation codes
// with signed byte planes of the weights, the same bits as every other ISA.
//
// Derivation. For a row, a column and a 256-block, T = sum_i W_i q_i with W_i = e_i * q9_g (i in
// group g; e = e2m1_q1(code) in [-12, 12], q9 = M * 2^E, M <= 15, E <= 14: packed.h). Write
// |e| = c * 2^a with c in {0, 1, 3} and a <= 3, so |W| = (c * M) << t with c * M <= 45 and
// t = a + E. Per 16-row tile and block let tb = (the smallest E among its nonzero scales) rounded
// down to even; then t - tb >= 0 and each weight lies in exactly one signed plane
//   P_k = +-(c * M) << (t - tb - 2k)   for t - tb in {2k, 2k + 1}   (|P_k| <= 90),
// W = 2^tb * sum_k 4^k P_k. TDPBSSD C[m][n] += sum_k A[m][k] . B[k][n] over 64 inputs takes
// A = 16 columns' codes (a row of 64 bytes a column) and B = a plane's 16 rows x 64 inputs, its row
// j holding inputs 4j..4j+3 of the 16 rows (4 bytes a row): exactly the record's nibbles (packed.h:
// the low nibbles of bytes 0-63 are inputs 0-3 of each row, their high nibbles 4-7, bytes 64-127
// 8-15). One C tile a plane, summed over the block's chunks: |C_k| <= 90 * 127 * 256 < 2^22, and
// with at most kMaxPlanes = 5 planes S = sum_k C_k << 2k < 2^22 * 341 < 2^31 is an exact int32;
// T = S * 2^tb. float(T) * 2^-10 = float(S) * 2^(tb - 10): scaling by a power of two commutes with
// the one rounding (no overflow or underflow: tb - 10 in [-10, 4]). Then the pinned steps c * d,
// c * scale2, acc + c, blocks ascending, zero blocks skipped; y = half(acc). Tiles whose scales
// need more planes (a spread of E above 5 or 6 in some block) run the AVX-512 kernel, which gives
// the same bits; the thread count and the window only choose what a call computes.
//
// Layout for the tiles: the activations copied per block, [block][column][256] (a row stride of
// 256 bytes: n_in strides that are multiples of 4 KiB put a tile's 16 rows in one L1 set), columns
// padded to 16 with zero codes; tile rows 64-byte aligned (unaligned rows span two lines: 4x
// slower). Blocks outer over a band of row tiles, so that a block's activations stay in L2; the
// float accumulators per tile [column][16].
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/packed.h"

namespace nvfp4::kern {
namespace {

constexpr int kMaxPlanes = 5;
constexpr int64_t kBand = 8;  // row tiles whose accumulators a block's pass keeps

// code -> c, a of |e2m1_q1(code)| = c * 2^a (codes 0 and 8: c = 0).
// |e| by code: 0 1 2 3 4 6 8 12 (and the same negated for codes 8-15).
inline __m512i tab_c() { return _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 1, 3, 1, 3, 1, 3, 0, 1, 1, 3, 1, 3, 1, 3)); }
inline __m512i tab_a() { return _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 2, 1, 3, 2, 0, 0, 1, 0, 2, 1, 3, 2)); }

// The smallest and largest E among a tile's nonzero scales in groups [g0, g1) (E = e - 1 for normal
// bytes, 0 for subnormal ones). Returns false when every scale is zero.
bool e_range(const uint8_t* tile, int64_t g0, int64_t g1, int& lo, int& hi) {
  __m128i mn = _mm_set1_epi8(127), mx = _mm_setzero_si128();
  bool any = false;
  for (int64_t g = g0; g < g1; ++g) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + g * kRecordBytes + 128));
    const __m128i e = _mm_and_si128(_mm_srli_epi16(v, 3), _mm_set1_epi8(0x0F));
    const __m128i E = _mm_subs_epu8(e, _mm_set1_epi8(1));
    const __mmask16 nz = _mm_test_epi8_mask(v, v);
    any = any || nz != 0;
    mn = _mm_mask_min_epu8(mn, nz, mn, E);
    mx = _mm_mask_max_epu8(mx, nz, mx, E);
  }
  alignas(16) uint8_t a[16], b[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(a), mn);
  _mm_store_si128(reinterpret_cast<__m128i*>(b), mx);
  lo = *std::min_element(a, a + 16);
  hi = *std::max_element(b, b + 16);
  return any;
}

// Planes needed for E in [lo, hi]: t - tb <= hi + 3 - tb, k = (t - tb) / 2.
inline int planes_for(int lo, int hi) { return ((hi + 3 - (lo & ~1)) >> 1) + 1; }

// The planes of tile `tile`'s groups [g0, g1) (one block), [plane][chunk][16][64], planes [0, np).
void make_planes(const uint8_t* tile, int64_t g0, int64_t g1, int tb, int np, int8_t* out) {
  const __m512i tc = tab_c(), ta = tab_a(), low = _mm512_set1_epi8(0x0F);
  // byte i of a record's scales vector -> lane i / 4
  const __m512i spread = _mm512_set_epi8(15, 15, 15, 15, 14, 14, 14, 14, 13, 13, 13, 13, 12, 12, 12, 12, 11, 11, 11, 11, 10, 10, 10, 10,
                                         9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4, 3, 3, 3, 3,
                                         2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* rec = tile + g * kRecordBytes;
    const __m512i s = _mm512_permutexvar_epi8(spread, _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 128))));
    const __m512i e = _mm512_and_si512(_mm512_srli_epi16(s, 3), low);
    const __mmask64 normal = _mm512_test_epi8_mask(e, e);
    const __m512i Mn = _mm512_mask_blend_epi8(normal, s, _mm512_or_si512(_mm512_and_si512(s, _mm512_set1_epi8(7)), _mm512_set1_epi8(8)));
    const __m512i M3 = _mm512_add_epi8(Mn, _mm512_add_epi8(Mn, Mn));
    // E - tb (saturating: zero scales have M = 0, so their weights are 0 whatever plane they name)
    const __m512i Erel = _mm512_subs_epu8(_mm512_subs_epu8(e, _mm512_set1_epi8(1)), _mm512_set1_epi8(static_cast<char>(tb)));
    const __m512i lo64 = _mm512_loadu_si512(rec), hi64 = _mm512_loadu_si512(rec + 64);
    const int64_t j = g - g0, chunk = j / 4, q = j % 4;
    const __m512i nibs[4] = {_mm512_and_si512(lo64, low), _mm512_and_si512(_mm512_srli_epi16(lo64, 4), low),
                             _mm512_and_si512(hi64, low), _mm512_and_si512(_mm512_srli_epi16(hi64, 4), low)};
    for (int h = 0; h < 4; ++h) {
      const __m512i nib = nibs[h];
      const __m512i c = _mm512_shuffle_epi8(tc, nib), a = _mm512_shuffle_epi8(ta, nib);
      const __mmask64 neg = _mm512_cmpgt_epu8_mask(nib, _mm512_set1_epi8(8));
      __m512i cm = _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(1)), Mn);
      cm = _mm512_mask_mov_epi8(cm, _mm512_cmpeq_epi8_mask(c, _mm512_set1_epi8(3)), M3);
      const __m512i t = _mm512_add_epi8(a, Erel);
      const __m512i k = _mm512_and_si512(_mm512_srli_epi16(t, 1), _mm512_set1_epi8(0x7F));
      const __mmask64 odd = _mm512_test_epi8_mask(t, _mm512_set1_epi8(1));
      __m512i v = _mm512_mask_add_epi8(cm, odd, cm, cm);
      v = _mm512_mask_sub_epi8(v, neg, _mm512_setzero_si512(), v);
      int8_t* dst = out + chunk * 1024 + (4 * q + h) * 64;
      for (int p = 0; p < np; ++p)
        _mm512_store_si512(dst + p * 4096, _mm512_maskz_mov_epi8(_mm512_cmpeq_epi8_mask(k, _mm512_set1_epi8(static_cast<char>(p))), v));
    }
  }
  // A partial block's missing groups: zero B rows (their activation codes are zero too).
  for (int64_t j = g1 - g0; j < ((g1 - g0 + 3) / 4) * 4; ++j)
    for (int p = 0; p < np; ++p) std::memset(out + p * 4096 + (j / 4) * 1024 + (j % 4) * 256, 0, 256);
}

// C tiles 0..NP-1 = the planes' sums for one 16-column tile over `chunks` chunks of 64 inputs.
template <int NP>
inline void tile_products(const int8_t* qa, const int8_t* pl, int64_t chunks, int32_t (*cb)[16][16]) {
  if constexpr (NP > 0) _tile_zero(0);
  if constexpr (NP > 1) _tile_zero(1);
  if constexpr (NP > 2) _tile_zero(2);
  if constexpr (NP > 3) _tile_zero(3);
  if constexpr (NP > 4) _tile_zero(4);
  for (int64_t c = 0; c < chunks; ++c) {
    _tile_loadd(5, qa + c * 64, 256);
    const int8_t* b = pl + c * 1024;
    _tile_loadd(6, b, 64);
    _tile_dpbssd(0, 5, 6);
    if constexpr (NP > 1) {
      _tile_loadd(7, b + 4096, 64);
      _tile_dpbssd(1, 5, 7);
    }
    if constexpr (NP > 2) {
      _tile_loadd(6, b + 2 * 4096, 64);
      _tile_dpbssd(2, 5, 6);
    }
    if constexpr (NP > 3) {
      _tile_loadd(7, b + 3 * 4096, 64);
      _tile_dpbssd(3, 5, 7);
    }
    if constexpr (NP > 4) {
      _tile_loadd(6, b + 4 * 4096, 64);
      _tile_dpbssd(4, 5, 6);
    }
  }
  if constexpr (NP > 0) _tile_stored(0, cb[0], 64);
  if constexpr (NP > 1) _tile_stored(1, cb[1], 64);
  if constexpr (NP > 2) _tile_stored(2, cb[2], 64);
  if constexpr (NP > 3) _tile_stored(3, cb[3], 64);
  if constexpr (NP > 4) _tile_stored(4, cb[4], 64);
}
using TileProductsFn = void (*)(const int8_t*, const int8_t*, int64_t, int32_t (*)[16][16]);
constexpr TileProductsFn kTileProducts[kMaxPlanes + 1] = {nullptr, tile_products<1>, tile_products<2>, tile_products<3>,
                                                          tile_products<4>, tile_products<5>};

}  // namespace

template <class Pf>
void gemm_a16q8_amx(const Packed& w, const ActQ8& a, int64_t tb, int64_t te, float* y) {
  const int64_t cols = (a.n + 15) / 16 * 16;
  // [block][column][256] codes, zero past the window and past n_in.
  Aligned<int8_t> qb(static_cast<size_t>(a.blocks * cols * 256));
  std::memset(qb.p, 0, static_cast<size_t>(a.blocks * cols * 256));
  for (int64_t c = 0; c < a.n; ++c)
    for (int64_t g = 0; g < a.groups; ++g)
      std::memcpy(qb.p + ((g / kBlockGroups) * cols + c) * 256 + (g % kBlockGroups) * kGroup, a.qg(g, c), kGroup);
  TileConfig cfg;
  for (int k = 0; k < 8; ++k) {
    cfg.colsb[k] = 64;
    cfg.rows[k] = 16;
  }
  Aligned<int8_t> planes(static_cast<size_t>(kMaxPlanes * 4096));
  Aligned<float> acc(static_cast<size_t>(kBand * cols * 16));
  alignas(64) int32_t cb[kMaxPlanes][16][16];
  // Per tile of the band and block: the planes' base (lo rounded down to even) and count, 0: every
  // scale zero (T = 0 for every column). A tile some block of which needs more than kMaxPlanes runs
  // the AVX-512 kernel instead (its scan also brings the band's records towards the cache).
  std::vector<uint8_t> base(static_cast<size_t>(kBand * a.blocks)), np(base.size());
  bool amx[kBand];
  const __m512 scale2 = _mm512_set1_ps(w.scale2);
  for (int64_t t0 = tb; t0 < te; t0 += kBand) {
    const int64_t t1 = std::min(te, t0 + kBand);
    bool any = false;
    for (int64_t t = t0; t < t1; ++t) {
      bool ok = true;
      for (int64_t b = 0; b < a.blocks; ++b) {
        int lo = 0, hi = 0;
        const size_t at = static_cast<size_t>((t - t0) * a.blocks + b);
        np[at] = 0;
        if (!e_range(w.tile(t), b * kBlockGroups, std::min<int64_t>(w.groups, (b + 1) * kBlockGroups), lo, hi)) continue;
        base[at] = static_cast<uint8_t>(lo & ~1);
        np[at] = static_cast<uint8_t>(planes_for(lo, hi));
        ok = ok && np[at] <= kMaxPlanes;
      }
      amx[t - t0] = ok;
      any = any || ok;
      if (!ok) gemm_a16q8_avx512vnni<Pf>(w, a, t, t + 1, y);
    }
    if (!any) continue;
    _tile_loadconfig(&cfg);
    std::fill(acc.p, acc.p + (t1 - t0) * cols * 16, 0.0f);
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t g0 = b * kBlockGroups, g1 = std::min<int64_t>(w.groups, g0 + kBlockGroups);
      const int64_t chunks = (g1 - g0 + 3) / 4;
      for (int64_t t = t0; t < t1; ++t) {
        const size_t at = static_cast<size_t>((t - t0) * a.blocks + b);
        if (!amx[t - t0] || np[at] == 0) continue;
        const int n_planes = np[at];
        make_planes(w.tile(t), g0, g1, base[at], n_planes, planes.p);
        const __m512 f = _mm512_castsi512_ps(_mm512_set1_epi32((base[at] - 10 + 127) << 23));
        float* acc_t = acc.p + (t - t0) * cols * 16;
        for (int64_t c0 = 0; c0 < a.n; c0 += 16) {
          kTileProducts[n_planes](qb.p + (b * cols + c0) * 256, planes.p, chunks, cb);
          const int nc = static_cast<int>(std::min<int64_t>(16, a.n - c0));
          for (int m = 0; m < nc; ++m) {
            const int64_t col = c0 + m;
            if (a.zero[static_cast<size_t>(col * a.blocks + b)]) continue;
            __m512i s = _mm512_load_si512(cb[0][m]);
            for (int k = 1; k < n_planes; ++k) s = _mm512_add_epi32(s, _mm512_slli_epi32(_mm512_load_si512(cb[k][m]), static_cast<unsigned>(2 * k)));
            __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), f);
            v = _mm512_mul_ps(v, _mm512_set1_ps(a.d[static_cast<size_t>(col * a.blocks + b)]));
            v = _mm512_mul_ps(v, scale2);
            float* o = acc_t + col * 16;
            _mm512_store_ps(o, _mm512_add_ps(_mm512_load_ps(o), v));
          }
        }
      }
    }
    _tile_release();
    // y = half(acc), a column's band of rows at a time (contiguous in y).
    for (int64_t c = 0; c < a.n; ++c) {
      for (int64_t t = t0; t < t1; ++t) {
        if (!amx[t - t0]) continue;
        const int64_t r0 = t * kTileRows;
        const int rows = static_cast<int>(std::min<int64_t>(kTileRows, w.n_out - r0));
        const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
        const __m256i h = _mm512_cvtps_ph(_mm512_load_ps(acc.p + ((t - t0) * cols + c) * 16), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm512_mask_storeu_ps(y + c * w.n_out + r0, keep, _mm512_cvtph_ps(h));
      }
    }
  }
}

template void gemm_a16q8_amx<PrefetchL1>(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template void gemm_a16q8_amx<PrefetchL1L2>(const Packed&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
