// The integer-exact FP8 layer on AMX-INT8 (order and layout derived in fp8_q8.h), for windows of
// kFp8AmxMinCols columns and more (kFp8AmxMinColsScaled for MXFP8 and 128 x 128 blocks, whose
// tiles close every 32 inputs); fewer take the AVX-512 VNNI form (its planes serve a column a unit
// for three vpdpbusd, which a few columns' streams keep up with). BENCHMARKS.md section 42.
//
// Derivation. TDPBSSD computes C[m][n] += sum_k A[m][4k..4k+3] . B[k][4n..4n+3] in int32 (signed
// bytes both). Take A = the window's activation codes (m: a column, 16 a tile; K inputs a row,
// contiguous) and B = 16 consecutive units of a 16-row group: unit u holds inputs 4u..4u+3 of the
// group's rows 0..15, 4 bytes a row (Fp8Q8's layout), which is exactly B's row k = u for n = the
// row. So C[t][r] = sum over the chunk's inputs of q[t][i] * W[r][i] when B holds W as signed
// bytes. |W| = m << sh (m <= 15, sh <= 14) does not fit a byte; four signed planes by exponent do:
// P_k = +-(m << (sh - 4k)) for sh in [4k, 4k + 3] (else 0), |P_k| <= 120, looked up from the byte's
// low 7 bits by vpermi2b, negated where the byte's sign is set; W = P0 + 16 P1 + 256 P2 + 4096 P3.
// Per plane, one C tile (four), summed over a 256-block's chunks: |C_k| <= 120 * 127 * 256 < 2^22,
// so T = C0 + 16 C1 + 256 C2 (< 2^31) + 4096 C3 (in i64) is the block's exact T, then the float
// steps of fp8_q8.h, lane by lane (chunks of 64 inputs, or 32 or 16 where n_in needs). MXFP8
// and 128 x 128 blocks: chunks of 32 inputs, the tiles
// closed after each into T_j = C0 + 16 C1 + 256 C2 + 4096 C3 in int32 (|T_j| < 2^30: the wrapped
// partial sums give the exact total), then f = float(T_j) * factor, s = s + f, as fp8_q8.h.
// Tiles: 0-3 the planes' C (16 columns x 16 rows), 4 A (16 columns x KC bytes), 5-7 B (KC / 4
// units x 64 bytes; three, so that a plane's load need not wait for the previous product). Columns past the window are zero codes (their results are not stored).
// A 256-block's planes (16 KiB) are made once per group and serve every 16-column tile.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/amx_tiles.h"
#include "kernels/fp8_q8.h"
#include "kernels/fp8_q8_factors_avx512.h"

namespace nvfp4::kern {
namespace {

struct SignedPlanes {
  alignas(64) int8_t p[4][128];
};
constexpr SignedPlanes make_planes() {
  SignedPlanes t{};
  for (int idx = 0; idx < 128; ++idx) {
    const int e = idx >> 3, f = idx & 7;
    const int m = e ? 8 + f : f, sh = e ? e - 1 : 0;
    t.p[sh / 4][idx] = static_cast<int8_t>(m << (sh % 4));
  }
  return t;
}
constexpr SignedPlanes kPlanes = make_planes();

constexpr int64_t kBlockUnits = kQ8Block / 4;  // units of a 256-block
// The planes of a block are made before its tile products run: prefetch a block and more ahead.
constexpr int64_t kAmxPrefetchBytes = 6144;

// Group g's units [u0, u1) as four signed planes, [plane][unit - u0][64].
void make_block_planes(const Fp8Q8& w, int64_t g, int64_t u0, int64_t u1, int8_t (*out)[kBlockUnits * kFp8Unit]) {
  __m512i lo[4], hi[4];
  for (int k = 0; k < 4; ++k) {
    lo[k] = _mm512_load_si512(kPlanes.p[k]);
    hi[k] = _mm512_load_si512(kPlanes.p[k] + 64);
  }
  for (int64_t u = u0; u < u1; ++u) {
    const uint8_t* p = w.unit(g, u);
    __builtin_prefetch(p + kAmxPrefetchBytes, 0, 3);
    const __m512i v = _mm512_loadu_si512(p);
    const __mmask64 neg = _mm512_movepi8_mask(v);
    for (int k = 0; k < 4; ++k) {
      const __m512i m = _mm512_permutex2var_epi8(lo[k], v, hi[k]);
      _mm512_store_si512(out[k] + (u - u0) * kFp8Unit, _mm512_mask_sub_epi8(m, neg, _mm512_setzero_si512(), m));
    }
  }
}

}  // namespace

void fp8_q8_amx(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y) {
  const bool mx = w.scaled();
  // Inputs a tile product: 64, or the largest of 32 and 16 dividing n_in (MXFP8, 128 x 128: one
  // 32-block, so that each closes).
  const int kc = !mx && w.n_in % 64 == 0 ? 64 : w.n_in % 32 == 0 ? 32 : 16;
  if (a.n < (mx ? kFp8AmxMinColsScaled : kFp8AmxMinCols)) {
    fp8_q8_avx512vnni(w, a, r_b, r_e, y);
    return;
  }
  const int64_t tiles = (a.n + 15) / 16;
  // Each column's codes contiguous, columns padded with zeros to whole tiles of 16.
  std::vector<int8_t> qc(static_cast<size_t>(tiles * 16 * w.n_in), 0);
  for (int64_t t = 0; t < a.n; ++t)
    for (int64_t j = 0; j < a.groups; ++j) std::memcpy(qc.data() + t * w.n_in + j * kGroup, a.qg(j, t), kGroup);
  TileConfig cfg;
  for (int k = 0; k < 4; ++k) {
    cfg.colsb[k] = 64;
    cfg.rows[k] = 16;
  }
  cfg.colsb[4] = static_cast<uint16_t>(kc);
  cfg.rows[4] = 16;
  for (int k = 5; k < 8; ++k) {
    cfg.colsb[k] = 64;
    cfg.rows[k] = static_cast<uint8_t>(kc / 4);
  }
  _tile_loadconfig(&cfg);
  Aligned<int8_t> planes_buf(4 * kBlockUnits * kFp8Unit);
  auto* planes = reinterpret_cast<int8_t(*)[kBlockUnits * kFp8Unit]>(planes_buf.p);
  alignas(64) int32_t cb[4][16][16];
  std::vector<float> acc(static_cast<size_t>(tiles * 16 * 16));
  for (int64_t g = r_b / kFp8RowPad; g * kFp8RowPad < r_e; ++g) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t b = 0; b < a.blocks; ++b) {
      const int64_t u0 = b * kBlockUnits, u1 = std::min<int64_t>(w.units, (b + 1) * kBlockUnits);
      make_block_planes(w, g, u0, u1, planes);
      const int64_t chunks = (u1 - u0) * 4 / kc;
      for (int64_t tt = 0; tt < tiles; ++tt) {
        const int8_t* qa = qc.data() + tt * 16 * w.n_in + b * kQ8Block;
        const int cols = static_cast<int>(std::min<int64_t>(16, a.n - tt * 16));  // the tile's columns in the window
        __m512 smx[16];
        for (int m = 0; m < 16; ++m) smx[m] = _mm512_setzero_ps();
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t c = 0; c < chunks; ++c) {
          _tile_loadd(4, qa + c * kc, w.n_in);
          const int64_t at = c * (kc / 4) * kFp8Unit;
          _tile_loadd(5, planes[0] + at, 64);
          _tile_loadd(6, planes[1] + at, 64);
          _tile_loadd(7, planes[2] + at, 64);
          _tile_dpbssd(0, 4, 5);
          _tile_dpbssd(1, 4, 6);
          _tile_dpbssd(2, 4, 7);
          _tile_loadd(5, planes[3] + at, 64);
          _tile_dpbssd(3, 4, 5);
          if (mx) {  // a 32-block closed: T_j, then f = float(T_j) * factor; s = s + f
            _tile_stored(0, cb[0], 64);
            _tile_stored(1, cb[1], 64);
            _tile_stored(2, cb[2], 64);
            _tile_stored(3, cb[3], 64);
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            const __m512 fk = fp8_factors_avx512(w, g, (b * kQ8Block + c * kc) / 32);
            for (int m = 0; m < cols; ++m) {
              const __m512i t0 = _mm512_load_si512(cb[0][m]), t1 = _mm512_load_si512(cb[1][m]);
              const __m512i t2 = _mm512_load_si512(cb[2][m]), t3 = _mm512_load_si512(cb[3][m]);
              const __m512i T = _mm512_add_epi32(_mm512_add_epi32(t0, _mm512_slli_epi32(t1, 4)),
                                                 _mm512_add_epi32(_mm512_slli_epi32(t2, 8), _mm512_slli_epi32(t3, 12)));
              smx[m] = _mm512_add_ps(smx[m], _mm512_mul_ps(_mm512_cvtepi32_ps(T), fk));
            }
          }
        }
        float* ac = acc.data() + tt * 256;
        if (mx) {
          for (int m = 0; m < cols; ++m) {
            const size_t at = static_cast<size_t>((tt * 16 + m) * a.blocks + b);
            if (a.zero[at]) continue;
            _mm512_storeu_ps(ac + m * 16, _mm512_add_ps(_mm512_loadu_ps(ac + m * 16), _mm512_mul_ps(smx[m], _mm512_set1_ps(a.d[at]))));
          }
          continue;
        }
        _tile_stored(0, cb[0], 64);
        _tile_stored(1, cb[1], 64);
        _tile_stored(2, cb[2], 64);
        _tile_stored(3, cb[3], 64);
        for (int m = 0; m < cols; ++m) {
          const size_t at = static_cast<size_t>((tt * 16 + m) * a.blocks + b);
          if (a.zero[at]) continue;
          const __m512i x = _mm512_add_epi32(_mm512_load_si512(cb[0][m]),
                                             _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(cb[1][m]), 4),
                                                              _mm512_slli_epi32(_mm512_load_si512(cb[2][m]), 8)));
          const __m512i c3 = _mm512_load_si512(cb[3][m]);
          const __m512i lo = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(x)),
                                              _mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(c3)), 12));
          const __m512i hi = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(x, 1)),
                                              _mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(c3, 1)), 12));
          __m512 c = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtepi64_ps(lo)), _mm512_cvtepi64_ps(hi), 1);
          c = _mm512_mul_ps(c, _mm512_set1_ps(0x1p-9f));
          c = _mm512_mul_ps(c, _mm512_set1_ps(a.d[at]));
          _mm512_storeu_ps(ac + m * 16, _mm512_add_ps(_mm512_loadu_ps(ac + m * 16), c));
        }
      }
    }
    const int64_t lo = std::max<int64_t>(r_b - g * kFp8RowPad, 0), hi = std::min<int64_t>(r_e - g * kFp8RowPad, kFp8RowPad);
    const __mmask16 mask = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
    for (int64_t t = 0; t < a.n; ++t)
      _mm512_mask_storeu_ps(y + t * w.n_out + g * kFp8RowPad, mask, _mm512_loadu_ps(acc.data() + t * 16));
  }
  _tile_release();
}

}  // namespace nvfp4::kern
