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
// same on every ISA, thread count and column count. Bound against float64 (tests): with
// S = sum_b |d_a[b]| * sum_j |d_w[j] * isum_j|, |y - exact| <= gamma(J + B + 1) * S, where J = 32-blocks
// per 256-block (8), B = 256-blocks, gamma(k) = k u / (1 - k u), u = 2^-24.
//
// Layout (HeadQ8::prepare): q [n_out][n_in] int8 row-major (the blocks' qs); d transposed,
// [n_in/32][rows] binary16 with rows = n_out rounded up to 16 (padding 0), so 8 or 16 consecutive
// rows' scales of one block are one load.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/packed.h"

namespace nvfp4::kern {

inline constexpr int64_t kHeadRowPad = 16;

struct HeadQ8 {
  int64_t n_out = 0, n_in = 0, blocks = 0, rows = 0;  // blocks: n_in / 32; rows: n_out padded
  std::vector<int8_t> q;     // [n_out][n_in]
  std::vector<uint16_t> d;   // [blocks][rows]
  const int8_t* row(int64_t r) const { return q.data() + r * n_in; }
  const uint16_t* scales(int64_t j) const { return d.data() + j * rows; }
  // From n_out rows of GGUF Q8_0 blocks (34 bytes per 32 values). n_in % 32 == 0.
  static HeadQ8 prepare(const uint8_t* blocks, int64_t n_out, int64_t n_in);
  size_t bytes() const { return q.size() + d.size() * 2; }
};

// HeadQ8Fn (packed.h): rows [r_b, r_e) of y for every column of a (a.n_in == w.n_in),
// y[t * w.n_out + r].
void head_q8_scalar(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avx2(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avxvnni(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);
void head_q8_avx512vnni(const HeadQ8&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
