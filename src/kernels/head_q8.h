// The integer-exact Q8_0 head: logits y = W x with W in GGML Q8_0 (include/nvfp4/q8_0.h) and x
// quantized exactly as a16q8 quantizes activations (ActQ8: per 256-value block b, int8 q_a and a
// float32 d_a[b] = 1 / iscale; see act_quant.cpp). A 256-block holds whole 32-blocks of W (n_in %
// 32 == 0), so the activation quantizer is reused unchanged.
//
// Derivation and pinned order, per output row r and column t:
//   isum_j = sum_{i in 32-block j} q_w[r][i] * q_a[t][i]       (int32, exact: |isum| <= 32*128*127)
//   s_b    = 0.0f; for j in 256-block b ascending: s_b = s_b + d_w[r][j] * float(isum_j)
//   acc    = 0.0f; for b ascending: acc = acc + d_a[t][b] * s_b;   y[t][r] = acc
// (float32 multiply, then float32 add; no FMA: -ffp-contract=off). float(isum_j) is exact (< 2^24)
// and d_w = half_to_float(d) is exact, so only these roundings happen, in this order, and every
// variant computes each row in one SIMD lane with exactly these operations: the bits are the
// same on every ISA, thread count and column count. isum_j is an integer, so how a kernel gets it
// (which products it pairs first, an offset it removes again) cannot change it. Bound against
// float64 (tests): with S = sum_b |d_a[b]| * sum_j |d_w[j] * isum_j|, |y - exact| <= gamma(J + B +
// 1) * S, where J = 32-blocks per 256-block (8), B = 256-blocks, gamma(k) = k u / (1 - k u), u = 2^-24.
//
// Layout (HeadQ8::prepare), row-interleaved so that one SIMD multiply-add serves 16 (or 8) rows in
// as many int32 lanes with no horizontal reduction. Rows are padded to groups of kHeadRowPad = 16
// (padding: weight 0, scale 0). Per group g and 32-block j, 512 bytes: 8 units k of 64 bytes, unit
// k holding bytes 4k..4k+3 of block j of the group's rows 0..15 in row order (4 bytes per row), so
// one 64-byte unit is one zmm (16 rows x 4 products per vpdpbusd lane) or two ymm (rows 0-7 in
// bytes 0-31, rows 8-15 in bytes 32-63). The bytes are stored offset, u = q_w + 128 (0..255): the
// unsigned operand of vpdpbusd as is; kernels remove the offset exactly (see head_q8_off). Scales
// d [g][j][16] binary16: one group's 16 scales of block j are one 32-byte load, beside the codes in
// a second sequential stream.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/packed.h"

namespace nvfp4::kern {

inline constexpr int64_t kHeadRowPad = 16;
inline constexpr int64_t kHeadUnit = 64;                   // bytes: 16 rows x 4 codes
inline constexpr int64_t kHeadBlockBytes = 8 * kHeadUnit;  // one group's 32-block

struct HeadQ8 {
  int64_t n_out = 0, n_in = 0, blocks = 0, rows = 0;  // blocks: n_in / 32; rows: n_out padded to 16
  HugeVector<uint8_t> q;    // [rows/16][blocks][8][16][4]: q_w + 128
  HugeVector<uint16_t> d;   // [rows/16][blocks][16]
  int64_t groups() const { return rows / kHeadRowPad; }
  const uint8_t* codes(int64_t g, int64_t j) const { return q.data() + (g * blocks + j) * kHeadBlockBytes; }
  const uint16_t* scales(int64_t g, int64_t j) const { return d.data() + (g * blocks + j) * kHeadRowPad; }
  // The row-major view: q_w[r][i] and the binary16 d_w[r][j].
  int8_t code(int64_t r, int64_t i) const {
    const int64_t lane = r % kHeadRowPad, j = i / 32, k = i % 32 / 4;
    return static_cast<int8_t>(codes(r / kHeadRowPad, j)[k * kHeadUnit + lane * 4 + i % 4] - 128);
  }
  uint16_t scale(int64_t r, int64_t j) const { return scales(r / kHeadRowPad, j)[r % kHeadRowPad]; }
  // From n_out rows of GGUF Q8_0 blocks (34 bytes per 32 values). n_in % 32 == 0.
  static HeadQ8 prepare(const uint8_t* blocks, int64_t n_out, int64_t n_in);
  // A copy of rows 0 .. n - 1 (n <= n_out, a multiple of kHeadRowPad): the first n / 16 groups.
  HeadQ8 prefix(int64_t n) const;
  size_t bytes() const { return q.size() + d.size() * 2; }
};

// Software prefetch kHeadPrefetchBytes ahead in both of a group's streams, once per 32-block: the
// codes' 8 lines (512 bytes) and the scales' line (32 bytes a block, so kHeadPrefetchBytes / 16
// ahead: the same lead in time). As the packed stream's prefetch_record (packed.h): without it
// the head streamed at 50-80% of the read bandwidth.
// (The head streams at 84-88% of the DRAM read with this one distance: BENCHMARKS 26's profile.)
// Always inlined, as every prefetch helper here: GCC may find an out-of-line one "pure" and delete
// its calls (src/kernels/pinned_dense.h, RowAhead).
inline constexpr int64_t kHeadPrefetchBytes = 2048;
[[gnu::always_inline]] inline void prefetch_head_block(const HeadQ8& w, int64_t g, int64_t j) {
  const char* c = reinterpret_cast<const char*>(w.codes(g, j)) + kHeadPrefetchBytes;
  for (int k = 0; k < 8; ++k) __builtin_prefetch(c + k * kHeadUnit, 0, 3);
  __builtin_prefetch(reinterpret_cast<const char*>(w.scales(g, j)) + kHeadPrefetchBytes / 16, 0, 3);
}

// off[t * w.blocks + j] = -128 * sum of column t's 32 codes of block j: the integer that turns
// sum_i (q_w + 128) * q_a into isum_j (|sum_i u * q_a| <= 32*255*127 < 2^31: exact in int32).
void head_q8_off(const ActQ8& a, int64_t blocks, int32_t* off);

// HeadQ8Fn (packed.h): rows [r_b, r_e) of y for every column of a (a.n_in == w.n_in),
// y[t * w.n_out + r].
void head_q8_scalar(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avx2(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avxvnni(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avx512vnni(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
