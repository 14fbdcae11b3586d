// The kernels' private contract: the packed weight stream that Linear::prepare builds once, the
// prepared activations of each integer-exact mode, and the table of kernels per ISA.
//
// Packed weights. Rows are grouped in tiles of 16 (the last tile padded with zero codes and zero
// scales, which contribute exactly 0). A tile is one strictly sequential stream of n_in/16
// records of 144 bytes, one per 16-value group g, in ascending g:
//   bytes [0, 64):    for row r of the tile and j in 0..3, byte 4r+j = code(g*16+j)   | code(g*16+4+j)  << 4
//   bytes [64, 128):  for row r of the tile and j in 0..3, byte 4r+j = code(g*16+8+j) | code(g*16+12+j) << 4
//   bytes [128, 144): the E4M3 scale byte of each of the 16 rows.
// So one 64-byte load holds 16 rows x 8 codes; its low nibbles are 16 rows x elements 0..3 (one
// int32 lane per row, as vpdpbusd wants them) and its high nibbles elements 4..7. A byte shuffle
// maps each code to the unsigned byte e2m1_q1(code) + 12 in [0, 24]; the +12 is cancelled by
// starting each group sum at -12 * sum(q) (ActQ8::corr), the same for every row.
// AVX2 reads the same bytes as two halves of 8 rows (bytes 0-31 / 32-63 of each 64).
//
// Beside the stream, per tile and 256-value block b (groups [16b, 16b + 16), the a16q8 block), a
// summary of its scales that the a16q8 kernels would otherwise rescan every call: emin, per row,
// the smallest E among the block's nonzero scale bytes (q9 = M * 2^E with M <= 15: E = e - 1 for
// normal bytes, 0 for subnormal ones; 0 when all are zero), and bit h of narrow set when every row
// of half h (rows 8h..8h+7) has E - emin <= kNarrowRange (the kernels' exact int32 path).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/kernels.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/matrix.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4::kern {

inline constexpr int kTileRows = 16;
inline constexpr int kRecordBytes = 144;
inline constexpr int kBlockGroups = kQ8Block / kGroup;  // records per a16q8 block
inline constexpr int kNarrowRange = 7;                   // narrow: mult = M << (E - emin) <= 1920
// Code -> e2m1_q1(code) + 12: the byte-shuffle table of the unsigned decode.
inline constexpr uint8_t kU12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

struct Packed {
  int64_t n_out = 0, n_in = 0, tiles = 0, groups = 0, blocks = 0;
  float scale2 = 1.0f;
  HugeVector<uint8_t> bytes;
  // The stream held elsewhere instead (an expert store's slot, src/models/expert_store.h): bytes
  // is then empty; null with bytes empty: not resident, no kernel may run (Linear checks).
  const uint8_t* ext = nullptr;
  std::vector<uint8_t> emin;    // [tile][block][16]
  std::vector<uint8_t> narrow;  // [tile][block]
  int64_t stream_bytes() const { return tiles * groups * kRecordBytes; }
  const uint8_t* data() const { return ext ? ext : bytes.data(); }
  bool resident() const { return ext != nullptr || !bytes.empty() || stream_bytes() == 0; }
  const uint8_t* tile(int64_t t) const { return data() + t * groups * kRecordBytes; }
  const uint8_t* emin_at(int64_t t, int64_t b) const { return emin.data() + (t * blocks + b) * kTileRows; }
  int narrow_at(int64_t t, int64_t b) const { return narrow[static_cast<size_t>(t * blocks + b)]; }
};
// Software prefetch of the records ahead of rec in a tile's stream (the tiles of a thread lie back
// to back, so this runs on into the next tile), at a plan's distances: Pf::kNear ahead into L1
// (prefetcht0) and, where the plan has one, Pf::kFar ahead into L2 (prefetcht1). A record is 144 bytes and starts
// at offset 16k mod 64, so it touches 3 cache lines, at +0, +64 and +128 (the last byte, +143,
// lies at most 48 + 143 = 191 bytes past its first line's start: in the third line); each
// distance prefetches all three. (Two prefetches a record, +0 and +128, missed every other line of
// the stream: 10 of each 18 lines were prefetched and the rest was left to the hardware
// prefetcher.)
// The distances, a plan per CPU (kernels.h's Prefetch, picked once beside the ISA: dispatch.cpp).
// One distance into L1 (2 KiB, BENCHMARKS 14: best of 1-8 KiB on the SPR-class guest) left the
// Zen 4 guest of BENCHMARKS 26 streaming at 17 GB/s from DRAM while the same kernel ran at 41 GB/s
// from cache and the host read 27 GB/s: compute and memory took turns. Far lines requested into L2
// do not hold L1's few miss buffers, so the lead can be long enough to cover DRAM's latency at the
// kernel's compute rate; the near ones bring them on into L1. Measured side by side there (bench
// kernels, 8192x2048 and 2048x8192, one column): one thread 20.7-22.4 GB/s (74-93% of the DRAM
// read) against 6-19 (23-84%), two threads parity or better; Llama-1B generation +20% at one
// thread, +10% at two (BENCHMARKS 26, which also has the grid tried). On Intel Xeon guests the one
// L1 distance reads more (BENCHMARKS 31 and 32: one thread 87.5% of DRAM against 78%, two 71.5%
// against 60.5%). A plan is a type, so each kernel is compiled once per plan with its distances
// as constants; kFar 0 prefetches nothing into L2.
// kRowNear / kRowFar: the same for PinnedDense's rows (pinned_dense.h RowAhead), F16 or F32 rows
// read side by side.
struct PrefetchL1 {       // Prefetch::l1: 2 KiB ahead into L1 (rows: 1 KiB)
  static constexpr int64_t kNear = 2048, kFar = 0;
  static constexpr int64_t kRowNear = 1024, kRowFar = 0;
};
struct PrefetchL1L2 {     // Prefetch::l1_l2: 1 KiB ahead into L1, 6 KiB ahead into L2 (rows: 512 B, 2 KiB)
  static constexpr int64_t kNear = 1024, kFar = 6144;
  static constexpr int64_t kRowNear = 512, kRowFar = 2048;
};
// The three lines of the record at far into L2 (when the plan has one) and those of the record at
// near into L1. Always inlined: GCC may find an out-of-line prefetch helper "pure" and delete its
// calls.
template <class Pf>
[[gnu::always_inline]] inline void prefetch_lines(const uint8_t* near, const uint8_t* far) {
  const char* n = reinterpret_cast<const char*>(near);
  if constexpr (Pf::kFar > 0) {
    const char* f = reinterpret_cast<const char*>(far);
    __builtin_prefetch(f, 0, 2);
    __builtin_prefetch(f + 64, 0, 2);
    __builtin_prefetch(f + 128, 0, 2);
  }
  __builtin_prefetch(n, 0, 3);
  __builtin_prefetch(n + 64, 0, 3);
  __builtin_prefetch(n + 128, 0, 3);
}
template <class Pf>
[[gnu::always_inline]] inline void prefetch_record(const uint8_t* rec) {
  prefetch_lines<Pf>(rec + Pf::kNear, rec + Pf::kFar);
}
// prefetch_record for one of two tiles' streams walked side by side (the pair passes of decode):
// the other stream's tile lies right after this one's, so a lead that runs past this tile's end
// (`end`) jumps the other tile (`skip` bytes, the tile stride) to the tile this stream takes next.
// (Plain prefetch_record there fetched lines of the other tile that its own stream had just read,
// and left the next pair's second tile to the hardware.)
// paired_lead: where a lead `at` (a record's address plus a distance) is requested in such a
// stream whose tile ends at `end`: one jump of the other tile. That is the record the lead names
// in this stream wherever the tile is at least as long as the lead (n_in >= 683 at the far lead of
// 6 KiB); shorter tiles (SmolLM2's n_in 576) leave the first kFar - S bytes of each tile to the
// hardware prefetcher, or to paired_lead_short. Stepping on in a loop until the lead was in this
// stream's tile ran decode 2-3x slower on the Zen 4 guest at every shape, 4096x4096 from L3
// included (BENCHMARKS 50); two conditional steps for every matrix were 5-10% slower at 4096x4096
// from DRAM, so the pair passes take them as a template choice, for short tiles only.
[[gnu::always_inline]] inline const uint8_t* paired_lead(const uint8_t* at, const uint8_t* end, int64_t skip) {
  return at >= end ? at + skip : at;
}
// paired_lead_short: up to two jumps (exact for tiles down to half the lead), for tiles shorter
// than the far lead (SmolLM2's n_in 576: 1536x576 decode 1.2x faster from DRAM on AVX-512,
// BENCHMARKS 50). The pass picks the form once per matrix (a template parameter).
[[gnu::always_inline]] inline const uint8_t* paired_lead_short(const uint8_t* at, const uint8_t* end, int64_t skip) {
  at = paired_lead(at, end, skip);
  return at >= end + 2 * skip ? at + skip : at;
}
template <class Pf, bool Short = false>
[[gnu::always_inline]] inline void prefetch_record_paired(const uint8_t* rec, const uint8_t* end, int64_t skip) {
  if constexpr (Short) {
    prefetch_lines<Pf>(paired_lead_short(rec + Pf::kNear, end, skip), paired_lead_short(rec + Pf::kFar, end, skip));
  } else {
    prefetch_lines<Pf>(paired_lead(rec + Pf::kNear, end, skip), paired_lead(rec + Pf::kFar, end, skip));
  }
}
// E of q9 = M * 2^E for a scale byte (see above).
inline int scale_e(uint8_t v) { return std::max((v >> 3) - 1, 0); }

// The packed stream of an NVFP4 matrix in the row layout, or in ggml's blocks (GGUF, read where
// the file maps them: no row-layout copy between). pool: tiles packed side by side (the same bytes).
Packed pack_weights(const RowView& w, const HugePageAllocator<uint8_t>& alloc = {}, ThreadPool* pool = nullptr);
Packed pack_weights(const GgmlView& w, const HugePageAllocator<uint8_t>& alloc = {}, ThreadPool* pool = nullptr);
// Rows of tile t back in the row layout (16 rows, padding included): for fallbacks and tests.
void unpack_tile(const Packed& p, int64_t t, RowMatrix& out);

// a16q8 activations of n columns, each quantized by the reference quantize_act_q8. Laid out in
// chunks of kChunk columns, group-major inside a chunk: a pass over up to 8 columns of one chunk
// reads one sequential stream (128 bytes per group), and column c of group g sits at a fixed
// offset from the pass's pointer. (Column-major strides of n * 16 bytes defeated the prefetchers
// and the TLB at n = 512.) Columns past n in the last chunk are padding, never read.
struct ActQ8 {
  static constexpr int64_t kChunk = 8;
  int64_t n = 0, n_in = 0, groups = 0, blocks = 0;
  std::vector<int8_t> q;       // [chunk][groups][kChunk][16]
  std::vector<int32_t> corr;   // [chunk][groups][kChunk]: -12 * sum of the group's q
  std::vector<int32_t> corr16; // the same slots: corr's low 16 bits, zero-extended (AVX2 adds it to int16 lane 0)
  std::vector<float> d;        // [n][blocks]: 1 / iscale
  std::vector<uint8_t> zero;   // [n][blocks]: the block contributes nothing
  int64_t slot(int64_t g, int64_t c) const { return ((c / kChunk) * groups + g) * kChunk + c % kChunk; }
  int64_t chunks() const { return (n + kChunk - 1) / kChunk; }
  int8_t* qg(int64_t g, int64_t c) { return q.data() + slot(g, c) * kGroup; }
  const int8_t* qg(int64_t g, int64_t c) const { return q.data() + slot(g, c) * kGroup; }
  void set_corr(int64_t g, int64_t c, int32_t v) {
    corr[static_cast<size_t>(slot(g, c))] = v;
    corr16[static_cast<size_t>(slot(g, c))] = v & 0xFFFF;
  }
  const int32_t* corrg(int64_t g, int64_t c) const { return corr.data() + slot(g, c); }
  const int32_t* corr16g(int64_t g, int64_t c) const { return corr16.data() + slot(g, c); }
  void shape(int64_t n_, int64_t n_in_) {
    n = n_;
    n_in = n_in_;
    groups = n_in / kGroup;
    blocks = (n_in + kQ8Block - 1) / kQ8Block;
    q.resize(static_cast<size_t>(chunks() * groups * kChunk * kGroup));
    corr.resize(static_cast<size_t>(chunks() * groups * kChunk));
    corr16.resize(corr.size());
    d.assign(static_cast<size_t>(n * blocks), 0.0f);
    zero.assign(static_cast<size_t>(n * blocks), 0);
  }
  // Column t's block b (groups [g0, g1)) is all zero: it contributes nothing.
  void set_zero_block(int64_t t, int64_t b, int64_t g0, int64_t g1) {
    zero[static_cast<size_t>(t * blocks + b)] = 1;
    for (int64_t g = g0; g < g1; ++g) {
      std::fill_n(qg(g, t), kGroup, int8_t{0});
      set_corr(g, t, 0);
    }
  }
};
// The quantizers' m: the first x[i], i in [lo, hi), whose magnitude equals amax (> 0).
inline float first_of_magnitude(const float* x, int64_t lo, int64_t hi, float amax) {
  for (int64_t i = lo; i < hi; ++i)
    if (std::fabs(x[i]) == amax) return x[i];
  return 0.0f;
}
// Quantizes columns [t0, t1) of x ([n][n_in]) into out, which out.shape(n, n_in) has sized: the
// columns are independent, so callers may split them across threads.
void prepare_q8_cols(const float* x, int64_t t0, int64_t t1, ActQ8& out);
using PrepQ8Fn = void (*)(const float* x, int64_t t0, int64_t t1, ActQ8& out);
// out.shape(n, n_in), then every column: the whole preparation on one thread.
void prepare_q8(const float* x, int64_t n, int64_t n_in, ActQ8& out);
// Columns cols[c0..c1) of src as columns [c0, c1) of out, which out.shape(n, src.n_in) has sized:
// the bytes prepare_q8 gives those columns' floats (each column is quantized on its own), so a
// token routed to several experts is quantized once and copied to each (Linear::forward_routed).
void gather_q8_cols(const ActQ8& src, const int64_t* cols, int64_t c0, int64_t c1, ActQ8& out);

// w4a4 activations of n columns, each quantized by the reference quantize_act_fp4.
struct ActFp4 {
  int64_t n = 0, n_in = 0, groups = 0;
  float input_scale = 1.0f;
  std::vector<int8_t> q1;      // [groups][n][16]: e2m1_q1 of each activation code
  std::vector<int32_t> corr;   // [groups][n]: -12 * sum of the group's q1
  std::vector<int32_t> q9;     // [groups][n]: e4m3_q9 of the group's scale
  const int8_t* qg(int64_t g, int64_t c) const { return q1.data() + (g * n + c) * kGroup; }
};
void prepare_fp4(const float* x, int64_t n, int64_t n_in, float input_scale, ActFp4& out);

// Each kernel computes the output rows of tiles [tile_b, tile_e) for all n columns:
// y[t * n_out + r]. Rows >= n_out (tile padding) are never written.
using Q8Fn = void (*)(const Packed& w, const ActQ8& a, int64_t tile_b, int64_t tile_e, float* y);
using Fp4Fn = void (*)(const Packed& w, const ActFp4& a, int64_t tile_b, int64_t tile_e, float* y);
using FloatFn = void (*)(const Packed& w, const float* x, int64_t n, int64_t tile_b,
                         int64_t tile_e, float* y);
// Dense row-major W[n_out][n_in] of dtype, rows [r_b, r_e).
using DenseFn = void (*)(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in,
                         const float* x, int64_t n, int64_t r_b, int64_t r_e, float* y);

// The runtime's pinned kernels (src/runtime: attention, SwiGLU, the pinned head),
// which also pick their variant from this table. Items and phases take the runtime's AttnItem.
using AttnItemFn = void (*)(const void* item);
using AttnPhaseFn = void (*)(const void* item, int phase, int64_t b, int64_t e);
using SwigluFn = void (*)(float* g, const float* u, int64_t n);
using SiluFn = void (*)(float* x, int64_t n);
using ToHalfFn = void (*)(const float* f, uint16_t* h, int64_t n);
using PinnedRowsFn = void (*)(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x, int64_t n,
                              float* y, int64_t b, int64_t e);

// The Q8_0 head (kernels/head_q8.h): rows [r_b, r_e) of y for every column of a.
struct HeadQ8;
using HeadQ8Fn = void (*)(const HeadQ8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y);
// An FP8 E4M3 layer in the integer-exact modes (kernels/fp8_q8.h): rows [r_b, r_e), every column.
struct Fp8Q8;
using Fp8Q8Fn = void (*)(const Fp8Q8& w, const ActQ8& a, int64_t r_b, int64_t r_e, float* y);

// gated_delta_head.h: S, k, q, v, decay, beta, mem, o, d_k, d_v, next (the same bits on every
// ISA; next: the state the caller runs next, which the vector forms prefetch, or null).
using DeltaHeadFn = void (*)(float*, const float*, const float*, const float*, float, float, float*, float*, int64_t, int64_t,
                             const float*);
void delta_head_scalar(float*, const float*, const float*, const float*, float, float, float*, float*, int64_t, int64_t, const float*);
void delta_head_avx2(float*, const float*, const float*, const float*, float, float, float*, float*, int64_t, int64_t, const float*);
void delta_head_avx512(float*, const float*, const float*, const float*, float, float, float*, float*, int64_t, int64_t, const float*);

struct KernelTable {
  Isa isa;
  PrepQ8Fn prep_q8;  // the a16q8 activation quantizer (same bits on every ISA)
  Q8Fn a16q8;      const char* a16q8_name;
  Q8Fn a16q8_gemm; const char* a16q8_gemm_name;  // n >= kPrefillN
  Fp4Fn w4a4;      const char* w4a4_name;
  FloatFn a16;     const char* a16_name;
  FloatFn f32;     const char* f32_name;
  FloatFn f64;     const char* f64_name;
  DenseFn dense;   const char* dense_name;
  AttnItemFn attn_item;
  AttnPhaseFn attn_phase;
  SwigluFn swiglu;
  SiluFn silu;       // x = silu(x) in place (the Gated DeltaNet conv and output gate)
  SwigluFn geglu;    // g = gelu_tanh(g) * u (Gemma 4)
  ToHalfFn to_half;  // float_to_half over a row (the F16 KV cache's stores)
  PinnedRowsFn pinned_rows; const char* pinned_name;  // "gemv_pinned16_<isa>"
  HeadQ8Fn head_q8; const char* head_q8_name;          // the integer-exact Q8_0 head
  DeltaHeadFn delta_head; const char* delta_head_name; // Gated DeltaNet: one value head's delta rule
  DenseFn fp8s;    const char* fp8s_name;  // the scaled FP8 forms (DType::mxfp8, fp8_b128): gemv_fp8s*.cpp
  Fp8Q8Fn fp8_q8;  const char* fp8_q8_name;  // FP8 E4M3 x a16q8 activations, integer-exact: fp8_q8*.cpp
};
inline constexpr int64_t kPrefillN = 32;

// The table of an ISA (filled once) for active_prefetch()'s plan, or for a given plan. Entries
// without a vector kernel point at the scalar ones.
const KernelTable& table(Isa isa);
const KernelTable& table(Isa isa, Prefetch pf);

float dense_at(DType dtype, const uint8_t* bytes, int64_t k);  // element k as float32
// A scaled FP8 form's weight (r, i) as float32: e4m3(code) * scale, the truth every ISA's widening
// matches bit for bit (w: codes then scales, DenseLinear::prepare_scaled).
// An E8M0 byte's 2^(e - 127) from its bits (e = 0: the subnormal 2^-127); e == 0xFF (NaN) is
// refused at load. Equal to e8m0_to_float for bytes 0..254 (tested).
inline float e8m0_bits(uint8_t e) {
  const uint32_t b = e ? static_cast<uint32_t>(e) << 23 : 0x00400000u;
  float f;
  __builtin_memcpy(&f, &b, 4);
  return f;
}
float fp8s_at(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, int64_t r, int64_t i);

// ---- the variants (one file each) ----------------------------------------------------------
void gemv_a16q8_scalar(const Packed&, const ActQ8&, int64_t, int64_t, float*);
void gemv_w4a4_scalar(const Packed&, const ActFp4&, int64_t, int64_t, float*);
void gemv_a16_scalar(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_f32_scalar(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_f64_scalar(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_dense_scalar(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t,
                       int64_t, float*);
void gemv_fp8s_scalar(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, float*);
void gemv_fp8s_avx2(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, float*);
void gemv_fp8s_avx512(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t, int64_t, float*);

template <class Pf> void gemv_a16q8_avx2(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf> void gemm_a16q8_avx2(const Packed&, const ActQ8&, int64_t, int64_t, float*);
void prepare_q8_cols_avx2(const float*, int64_t, int64_t, ActQ8&);
void prepare_q8_avx2(const float* x, int64_t n, int64_t n_in, ActQ8& out);  // shape, then all columns
template <class Pf> void gemv_w4a4_avx2(const Packed&, const ActFp4&, int64_t, int64_t, float*);
void gemv_a16_avx2(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_f32_avx2(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_dense_avx2(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t,
                     int64_t, float*);

// AVX-VNNI (vpdpbusd on 256-bit registers; compiled when the compiler has -mavxvnni).
template <class Pf> void gemv_a16q8_avxvnni(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf> void gemm_a16q8_avxvnni(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf> void gemv_w4a4_avxvnni(const Packed&, const ActFp4&, int64_t, int64_t, float*);

void prepare_q8_cols_avx512(const float*, int64_t, int64_t, ActQ8&);
void prepare_q8_avx512(const float* x, int64_t n, int64_t n_in, ActQ8& out);  // shape, then all columns
template <class Pf> void gemv_a16q8_avx512vnni(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf> void gemm_a16q8_avx512vnni(const Packed&, const ActQ8&, int64_t, int64_t, float*);
template <class Pf> void gemm_a16q8_amx(const Packed&, const ActQ8&, int64_t, int64_t, float*);  // AMX builds only
template <class Pf> void gemv_w4a4_avx512vnni(const Packed&, const ActFp4&, int64_t, int64_t, float*);
void gemv_a16_avx512(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_f32_avx512(const Packed&, const float*, int64_t, int64_t, int64_t, float*);
void gemv_dense_avx512(DType, const uint8_t*, int64_t, int64_t, const float*, int64_t, int64_t,
                       int64_t, float*);

}  // namespace nvfp4::kern
