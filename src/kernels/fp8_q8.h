// An FP8 E4M3 linear layer (per-tensor or per-channel scale) in the integer-exact modes: y = W x
// with W's E4M3 bytes as stored and x quantized exactly as a16q8 quantizes activations (ActQ8: per
// 256-value block b, int8 q_a and d_a[b] = 1 / iscale; act_quant.cpp), so a mixed checkpoint (FP8
// attention beside NVFP4 MLPs) gives the same bits on every ISA, thread count and batch.
//
// Derivation. An E4M3 byte's value times 2^9 is an integer (SPEC.md: e4m3_q9), W = +-m * 2^sh with
// m <= 15 and sh <= 14 (|W| <= 229376 = 448 * 2^9). Per output row r, column t and 256-block b:
//   T_b = sum_{i in b} W[r][i] * q_a[t][i]     (an integer: |T_b| <= 256 * 229376 * 127 < 2^33, i64)
//   acc = 0.0f; for b ascending, unless column t's block b is all zero (ActQ8::zero):
//     c = float(T_b); c = c * 2^-9; c = c * d_a[t][b]; acc = acc + c      (float32, unfused)
//   y[t][r] = acc    (the layer's scale, one or one per row, then multiplies y: ops/model_impl.h)
// MXFP8 (an E8M0 byte e_j per 32 inputs of a row, Fp8Q8::mx) instead, per 256-block b:
//   s = 0.0f; for each 32-block j of b ascending: T_j = sum_{i in j} W[r][i] * q_a[t][i] (int32,
//   |T_j| < 2^30); f = float(T_j); f = f * (2^(e_j - 127) * 2^-9); s = s + f   (the scale's product
//   is a power of two, exact as a float for every byte the loader takes)
//   then, unless the block is all zero: c = s * d_a[t][b]; acc = acc + c
//   y[t][r] = acc
// FP8 with 128 x 128 block scales (DeepSeek, GLM, Kimi: one F32 scale s per 128 rows x 128 inputs,
// Fp8Q8::bs) takes MXFP8's steps with the 32-block's factor the scale of the 128-block holding it,
// times 2^-9: k = s * 2^-9, one float32 product rounded once at load (Fp8Q8::b128_factor), shared by
// its four 32-blocks (fewer at a right edge); n_in % 32 == 0.
// float(T_b) rounds the exact integer once (to nearest even), so every variant that gets T_b
// exactly, in any order, gives the same bits. Bound against float64: with S = sum_b |d_a[b]| *
// |T_b| * 2^-9, |y - exact(q)| <= gamma(B + 2) * S (B blocks; gamma(k) = k u / (1 - k u), u = 2^-24).
//
// How the vector forms get T_b exactly:
//  - AVX-512 (VNNI + VBMI): |W| split into three byte planes by exponent, each weight in one:
//    A = m << sh (sh <= 4), B = m << (sh - 5) (5 <= sh <= 9), C = m << (sh - 10) (sh >= 10), all
//    <= 240, looked up from the byte's low 7 bits by vpermi2b; the weight's sign moves to the
//    activation byte (q -> -q, |q| <= 127); three vpdpbusd per 64 bytes and column, then
//    T = A + 32 B + 1024 C (|A + 32 B| < 2^31 per lane and block; C added in i64).
//  - AVX2: each weight widened exactly to float (value * 2^-8 through F16 bits), times q * 2^17:
//    the product W q has at most 12 significant bits and |W q| < 2^25, so it is exact and its
//    conversion to int32 too; int32 lanes hold at most 64 products of a block (< 2^31).
//
// Layout (Fp8Q8::prepare), row-interleaved as the Q8_0 head (head_q8.h): rows padded to groups
// of 16 (padding: byte 0, weight +0); per group, n_in / 4 units of 64 bytes, unit u holding inputs
// 4u..4u+3 of the group's rows 0..15 in row order (4 bytes per row): one zmm is 16 rows x 4
// inputs (one vpdpbusd lane per row), bytes 0-31 rows 0-7 and 32-63 rows 8-15. n_in % 16 == 0
// (whole ActQ8 groups).
#pragma once
#include <cstdint>

#include "kernels/packed.h"

namespace nvfp4::kern {

inline constexpr int64_t kFp8RowPad = 16;
inline constexpr int64_t kFp8Unit = 64;  // bytes: 16 rows x 4 inputs
// Software prefetch distance in a group's stream (bytes), as the Q8_0 head's.
inline constexpr int64_t kFp8PrefetchBytes = 2048;
// Prefetch for the unit at p: kFp8PrefetchBytes ahead into L1, and at a 4 KiB page's first unit
// the next page's first line into L2, so that page's stream starts (the hardware's L2 streamer
// stops at page ends) before the L1 lead reaches it. On a Xeon from DRAM, AVX-512, n = 1-2: 0.89-0.97x
// the time at one thread and 0.90-0.96x at two (L1 leads of 3-8 KiB instead were slower; the AVX2
// form, compute-bound, does not change; docs/BENCHMARKS.md section 55). Always inlined (GCC may
// drop an out-of-line prefetch helper).
[[gnu::always_inline]] inline void fp8_prefetch_unit(const uint8_t* p) {
  __builtin_prefetch(p + kFp8PrefetchBytes, 0, 3);
  if ((reinterpret_cast<uintptr_t>(p) & 4095) == 0) __builtin_prefetch(p + 4096, 0, 2);
}

struct Fp8Q8 {
  int64_t n_out = 0, n_in = 0, rows = 0, units = 0;  // rows: n_out padded to 16; units: n_in / 4
  HugeVector<uint8_t> b;  // [rows / 16][units][16][4] E4M3 bytes
  HugeVector<uint8_t> mx;  // MXFP8: [rows / 16][n_in / 32][16] E8M0 bytes (padding rows 127); empty: none
  HugeVector<float> bs;    // 128 x 128 blocks: [rows / 16][ceil(n_in / 128)][16] factors s * 2^-9; empty: none
  // Whether T closes every 32 inputs, scaled by a factor per row and 32-block (MXFP8, 128 x 128).
  bool scaled() const { return !mx.empty() || !bs.empty(); }
  int64_t groups() const { return rows / kFp8RowPad; }
  const uint8_t* unit(int64_t g, int64_t u) const { return b.data() + (g * units + u) * kFp8Unit; }
  uint8_t byte(int64_t r, int64_t i) const { return unit(r / kFp8RowPad, i / 4)[r % kFp8RowPad * 4 + i % 4]; }
  const uint8_t* mx_scales(int64_t g, int64_t j32) const { return mx.data() + (g * (n_in / 32) + j32) * kFp8RowPad; }
  // The power of two an E8M0 byte scales a 32-block's T by: 2^(e - 127) * 2^-9, exact.
  static float mx_factor(uint8_t e) { return e8m0_bits(e) * 0x1p-9f; }
  // A 128 x 128 block's factor: its F32 scale times 2^-9, one product rounded once.
  static float b128_factor(float s) { return s * 0x1p-9f; }
  const float* b128_factors(int64_t g, int64_t j32) const { return bs.data() + (g * ((n_in + 127) / 128) + j32 / 4) * kFp8RowPad; }
  // Row lane `lane` of group g's factor for 32-block j32 (scaled() layers).
  float factor(int64_t g, int64_t j32, int64_t lane) const {
    return mx.empty() ? b128_factors(g, j32)[lane] : mx_factor(mx_scales(g, j32)[lane]);
  }
  // From row-major E4M3 bytes [n_out][n_in]; n_in % 16 == 0 (the caller checks).
  static Fp8Q8 prepare(const uint8_t* codes, int64_t n_out, int64_t n_in);
  // MXFP8: codes and E8M0 scales [n_out][n_in / 32]; n_in % 32 == 0.
  static Fp8Q8 prepare_mx(const uint8_t* codes, const uint8_t* scales, int64_t n_out, int64_t n_in);
  // FP8 with 128 x 128 block scales: codes and F32 scales [ceil(n_out / 128)][ceil(n_in / 128)];
  // n_in % 32 == 0.
  static Fp8Q8 prepare_b128(const uint8_t* codes, const float* scales, int64_t n_out, int64_t n_in);
  size_t bytes() const { return b.size() + mx.size() + bs.size() * sizeof(float); }
};

// Fp8Q8Fn (packed.h): rows [r_b, r_e) of y for every column of a, y[t * w.n_out + r].
void fp8_q8_scalar(const Fp8Q8&, const ActQ8&, int64_t, int64_t, float*);
void fp8_q8_avx2(const Fp8Q8&, const ActQ8&, int64_t, int64_t, float*);
void fp8_q8_avx512vnni(const Fp8Q8&, const ActQ8&, int64_t, int64_t, float*);
// AMX-INT8 (fp8_q8_amx.cpp): windows of kFp8AmxMinCols columns and more (MXFP8 and 128 x 128
// blocks: kFp8AmxMinColsScaled); fewer, the VNNI form (where each is faster: BENCHMARKS.md 42).
inline constexpr int64_t kFp8AmxMinCols = 8;
inline constexpr int64_t kFp8AmxMinColsScaled = 16;
void fp8_q8_amx(const Fp8Q8&, const ActQ8&, int64_t, int64_t, float*);

}  // namespace nvfp4::kern
