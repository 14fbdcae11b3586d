// The body of attention for one token and a group of query heads that share a KV head (GQA), and
// SwiGLU, compiled three times (attention.cpp: baseline
// x86-64; attention_item_avx2.cpp; attention_item_avx512.cpp) so that the compiler vectorizes its
// elementwise loops at each width. The pinned exp does not auto-vectorize (its clamps and int64
// conversion stay scalar), so each copy passes its own softmax-numerator step: the scalar loop
// below, or pinned_exp_avx2.h / pinned_exp_avx512.h, which do the same IEEE operations per lane.
// The KV cache is read as it is stored, F32, F16 or FP8 E4M3: an F16 cache's keys and values are
// widened in registers, 16 at a time, right before the products that use them, by the widening
// each copy passes (F16C's vcvtph2ps in the avx2/avx512 files, half_to_float in the baseline one,
// all exact: every F16 value is a float). An E4M3 byte b is widened as its bits placed in an F16
// (e4m3_as_half: exponent and mantissa shifted left by 7, the sign to bit 15), which is b's value
// times 2^-8 exactly (normal and subnormal alike), then multiplied by 256 * scale: one float
// rounding of value(b) * scale, the same in every copy (for every byte but the NaNs 0x7F/0xFF,
// which the cache never stores for a finite input: kv_fp8_byte saturates). Each product and sum
// is then the same IEEE operation on the same float values in the same order as with an F32
// cache holding the widened values.
// Grouping heads only lets one load of a key or value row serve several heads and gives more
// independent add chains; each head's arithmetic is the one-head order below.
// No loop here reassociates a sum (the build forbids contraction and fast-math), so every copy
// gives the same bits; docs/DETERMINISM.md lists the order.
// Internal linkage on purpose: each translation unit keeps its own copy.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "nvfp4/codec.h"
#include "kernels/pinned_math.h"

namespace nvfp4 {
namespace {

inline constexpr int kMaxGroup = 4;  // heads per item; larger GQA groups are split

inline constexpr int64_t kTile = 16;  // positions per key tile (attention.h kKeyTile)

// Software prefetch (no effect on any result): the score chunks read the next chunk's key rows
// and the output chunks the value row kPrefetchRows ahead while they compute; the hardware
// prefetcher alone left decode attention at about 60% of the read bandwidth (SmolLM2, 512
// positions: 8.9 of 14.3 GB/s on one thread, the weight matrices at 100%).
inline constexpr int64_t kPrefetchRows = 16;

// The cache's element (AttnItem::elem).
enum AttnElem : int { kElemF32 = 0, kElemF16 = 1, kElemE4m3 = 2 };

struct AttnItem {
  // The cache's keys and values as stored: float, uint16_t (F16) or uint8_t (E4M3), per elem.
  const void* K;  // tiled: key d of position j at K[((j / kTile) * hd + d) * kTile + j % kTile]
  const void* V;  // [len][hd]
  int elem;
  float k_mul, v_mul;  // E4M3: 256 * the layer's k and v scales (see above)
  int g;           // heads in this item, 1..kMaxGroup
  const float* q[kMaxGroup];  // [hd] each
  int64_t len, hd;
  float scale;
  float* s[kMaxGroup];  // scratch [len] each
  float* o[kMaxGroup];  // [hd] each
};

// out[j] = float(exp(double(s[j] - mx))) for j < n; out may be s.
inline void exp_shifted_scalar_body(const float* s, float mx, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(pinned::exp(static_cast<double>(s[j] - mx)));
}

// An E4M3 byte's bits as an F16 whose value is the byte's times 2^-8 (exact for every byte but
// the NaNs), and the byte's widened value at mul = 256 * scale: what every copy's 16-wide
// widening computes per lane.
inline uint16_t e4m3_as_half(uint8_t b) { return static_cast<uint16_t>(((b & 0x7F) << 7) | ((b & 0x80) << 8)); }
inline float e4m3_widened(uint8_t b, float mul) { return half_to_float(e4m3_as_half(b)) * mul; }

// Widen: a functor, widen(h, f) sets f[0, 16) to the 16 F16 values at h, exactly, or to the 16
// E4M3 values at h widened at its scale.
// widen_rows: an F16 chunk's n rows of 16 (row r at p + r * stride) widened into buf[r * 16 ..];
// nothing for a float cache. row: where the loops read row r, the cache itself (float) or buf.
// (The rows are widened before the products, not through an array of row pointers: with one,
// GCC kept the accumulators on the stack.)
template <int64_t N, class Widen>
inline void widen_rows(const float*, int64_t, float*, Widen) {}
template <int64_t N, class E, class Widen>
inline void widen_rows(const E* p, int64_t stride, float* buf, Widen widen) {
  for (int64_t r = 0; r < N; ++r) widen(p + r * stride, buf + r * 16);
}
inline const float* row(const float* p, const float*) { return p; }
template <class E>
inline const float* row(const E*, const float* buf) { return buf; }

// Element i of a row as float (the tails: fewer than 16 values left in a value row); mul: an
// E4M3 cache's 256 * scale.
inline float elem(const float* p, int64_t i, float) { return p[i]; }
inline float elem(const uint16_t* p, int64_t i, float) { return half_to_float(p[i]); }
inline float elem(const uint8_t* p, int64_t i, float mul) { return e4m3_widened(p[i], mul); }

// Elements of E in one 64-byte line (the prefetch step).
template <class E>
inline constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(E));

// The chunks' vectors: GCC vector types of S::kW float lanes (4 on SSE2, 8 on AVX2, 16 on
// AVX-512), each operation lane by lane the IEEE one (no contraction), loaded and stored with
// memcpy. Written as vectors so that every accumulator has its own register: with float arrays
// and the vectorizer, GCC 12 kept the score accumulators of a grouped item on the stack (a load,
// an add and a store per key vector and dimension; AVX2 scores at a quarter of the ports' rate).
template <int W>
struct Lanes {
  typedef float V __attribute__((vector_size(4 * W)));
};
template <class V>
inline V load_lanes(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void store_lanes(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// An ISA's register shape (S): kW float lanes a vector, kRegs vector registers, key chunks of at
// most kKeys keys and output chunks of at most kDims dimensions (16, 32 or 64). A chunk of n
// vectors per head holds G * n accumulators, its n loaded row vectors (shared by the G heads when
// G > 1) and the broadcast weight and a product: chunks are cut so that these fit the registers
// (with one more accumulator or row than fit, GCC spilled accumulators to the stack, each then a
// load, an add and a store per key row or value row). The order per key and per dimension never
// changes, however the chunks are cut.
template <class S, int G>
constexpr bool fits_registers(int64_t n) {
  return G * n + (G > 1 ? n : 0) + 2 <= S::kRegs;
}
template <class S, int G>
constexpr int64_t key_chunk() {
  int64_t c = S::kKeys;
  while (c > kTile && !fits_registers<S, G>(c / S::kW)) c -= kTile;
  return c;
}
template <class S, int G>
constexpr int64_t dim_chunk() {
  int64_t d = S::kDims;
  while (d > 16 && !fits_registers<S, G>(d / S::kW)) d /= 2;
  return d;
}

// Scores of keys [j0, j0 + C) (j0 and C multiples of kTile) for the G heads: per key, d
// ascending, in register-held vectors across d, one load of each tile row for all heads.
// noinline: inlined into the item function, GCC 12 kept the G = 1 accumulators on the stack.
// dst[h]: where head h's C scores go (a.s[h] + j0, or a tile's buffer for the last keys).
template <class S, int G, int64_t C, class E, class Widen>
__attribute__((noinline)) void score_chunk(const AttnItem& a, int64_t j0, Widen widen, float* const* dst) {
  static_assert(C % kTile == 0 && kTile % S::kW == 0);
  using V = typename Lanes<S::kW>::V;
  constexpr int64_t T = kTile, NT = C / T, VT = T / S::kW;  // keys per tile, tiles, vectors per tile
  const E* __restrict kt = static_cast<const E*>(a.K) + (j0 / kTile) * a.hd * kTile + j0 % kTile;
  V acc[G][NT * VT];
#pragma GCC unroll 64
  for (int h = 0; h < G; ++h)
#pragma GCC unroll 64
    for (int64_t v = 0; v < NT * VT; ++v) acc[h][v] = V{};
  for (int64_t d = 0; d < a.hd; ++d) {
    // The same row of the next chunk's tiles (one 64-byte line per tile and float row, per two
    // F16 rows or per four E4M3 rows): a chunk's C x hd keys ahead.
    if (sizeof(E) == 4 || d % (4 / static_cast<int64_t>(sizeof(E))) == 0)
#pragma GCC unroll 64
      for (int64_t t = 0; t < NT; ++t) __builtin_prefetch(kt + ((NT + t) * a.hd + d) * kTile, 0, 3);
    alignas(64) float buf[NT][T];  // an F16 or E4M3 chunk's rows at d, widened
    widen_rows<NT>(kt + d * kTile, a.hd * kTile, buf[0], widen);
#pragma GCC unroll 64
    for (int h = 0; h < G; ++h) {
      const float qd = a.q[h][d];
#pragma GCC unroll 64
      for (int64_t t = 0; t < NT; ++t) {
        const float* __restrict kd = row(kt + (t * a.hd + d) * kTile, buf[t]);
#pragma GCC unroll 64
        for (int64_t v = 0; v < VT; ++v) acc[h][t * VT + v] = acc[h][t * VT + v] + qd * load_lanes<V>(kd + v * S::kW);
      }
    }
  }
#pragma GCC unroll 64
  for (int h = 0; h < G; ++h)
#pragma GCC unroll 64
    for (int64_t v = 0; v < NT * VT; ++v) store_lanes(dst[h] + v * S::kW, acc[h][v]);
}

// Tiny weights are zero. A float multiply whose operand or result is subnormal takes a microcode
// assist on Intel cores (about 95 cycles a vector instruction on a Xeon of 2026, against 2 for a
// normal one; additions and conversions with subnormals take none), and softmax weights of keys
// far below the maximum are tiny: on Gemma 4 (unscaled normed q and k) most of a global layer's
// weights and about a tenth of a sliding layer's. The softmax therefore writes +0 for a weight
// below kTinyWeight = 2^-101: with an F16 value (at least 2^-24 where nonzero) every product of a
// weight at or above it is a normal float, and each product a dropped weight would have added is
// below 2^-101 times its value. (Until BENCHMARKS 60 such products were kept, computed exactly
// in double so as to avoid the assist: the output phase then took 2-3x its time on Gemma 4.) A
// cache of E4M3 values at a small scale, or of F32 values below 2^-24, may still meet a subnormal
// product: the same bits, only slower.
inline constexpr float kTinyWeight = 0x1p-101f;

// Output dimensions [d0, d0 + C) (C a multiple of 16) for the G heads over value rows [j0, j1):
// per dimension, j ascending, continuing the sums in a.o (from zero when j0 == 0; a float stored
// and loaded again is the same float, so cutting j into blocks changes no bit).
template <class S, int G, int64_t C, class E, class Widen>
__attribute__((noinline)) void output_chunk(const AttnItem& a, int64_t d0, int64_t j0, int64_t j1, Widen widen) {
  static_assert(C % 16 == 0 && C % S::kW == 0);
  using V = typename Lanes<S::kW>::V;
  constexpr int64_t NV = C / S::kW;
  V acc[G][NV];
#pragma GCC unroll 64
  for (int h = 0; h < G; ++h)
#pragma GCC unroll 64
    for (int64_t v = 0; v < NV; ++v) acc[h][v] = j0 == 0 ? V{} : load_lanes<V>(a.o[h] + d0 + v * S::kW);
  for (int64_t j = j0; j < j1; ++j) {
    const E* __restrict vj = static_cast<const E*>(a.V) + j * a.hd + d0;
    // The row kPrefetchRows ahead, one 64-byte line at a time.
    for (int64_t dd = 0; dd < C; dd += kLine<E>) __builtin_prefetch(vj + kPrefetchRows * a.hd + dd, 0, 3);
    alignas(64) float buf[C];  // an F16 or E4M3 row's C values, widened
    widen_rows<C / 16>(vj, 16, buf, widen);
    const float* __restrict vd = row(vj, buf);
#pragma GCC unroll 64
    for (int h = 0; h < G; ++h) {
      const float w = a.s[h][j];
#pragma GCC unroll 64
      for (int64_t v = 0; v < NV; ++v) acc[h][v] = acc[h][v] + w * load_lanes<V>(vd + v * S::kW);
    }
  }
#pragma GCC unroll 64
  for (int h = 0; h < G; ++h)
#pragma GCC unroll 64
    for (int64_t v = 0; v < NV; ++v) store_lanes(a.o[h] + d0 + v * S::kW, acc[h][v]);
}

// Softmax of G heads' scores in place, each head's own: scale, max, pinned exp, sum in double j
// ascending, times 1/sum. The G sums run side by side (G independent add chains: one head's
// chain alone waits on the add's latency at every key), each in its own order.
// A weight below kTinyWeight is written as +0 (above; a NaN stays NaN).
template <int W, int G, class ExpShifted>
inline void softmax_rows(float* const* s, int64_t len, float scale, ExpShifted exp_shifted) {
  for (int h = 0; h < G; ++h) {
    float* __restrict r = s[h];
    // Scale, then the maximum in two vectors of W lanes (which of two equal zeros wins cannot
    // change s - max; a NaN is never taken: the ternary is maxps with the new value first). As
    // GCC vectors of the ISA's width: written per lane, the ternary stayed scalar (it is no IEEE
    // max, so GCC does not vectorize it by itself), and a 16-lane vector on AVX2 went lane by
    // lane through the stack (a quarter of the softmax's time).
    for (int64_t j = 0; j < len; ++j) r[j] = r[j] * scale;
    using V = typename Lanes<W>::V;
    V m0, m1;
    for (int l = 0; l < W; ++l) m0[l] = m1[l] = -INFINITY;
    int64_t j = 0;
    for (; j + 2 * W <= len; j += 2 * W) {
      const V v0 = load_lanes<V>(r + j), v1 = load_lanes<V>(r + j + W);
      m0 = m0 < v0 ? v0 : m0;
      m1 = m1 < v1 ? v1 : m1;
    }
    float mx = -INFINITY;
    for (int l = 0; l < W; ++l) mx = mx < m0[l] ? m0[l] : mx;
    for (int l = 0; l < W; ++l) mx = mx < m1[l] ? m1[l] : mx;
    for (; j < len; ++j) mx = mx < r[j] ? r[j] : mx;
    exp_shifted(r, mx, r, len);
  }
  double sum[G];
  for (int h = 0; h < G; ++h) sum[h] = 0.0;
  for (int64_t i = 0; i < len; ++i)
    for (int h = 0; h < G; ++h) sum[h] += s[h][i];
  for (int h = 0; h < G; ++h) {
    float* __restrict r = s[h];
    const double inv = 1.0 / sum[h];
    for (int64_t i = 0; i < len; ++i) {
      const float w = static_cast<float>(r[i] * inv);
      r[i] = w < kTinyWeight ? 0.0f : w;
    }
  }
}

// (Items of 8 heads, reading a key once for a whole Qwen3 group, measured no faster than 4.)
// Scores of keys [j0, j1) (j0 a multiple of 16; j1 = len or a multiple of 16).
template <class S, int G, class E, class Widen>
inline void scores_range(const AttnItem& a, int64_t j0, int64_t j1, Widen widen) {
  constexpr int64_t kC = key_chunk<S, G>();
  float* dst[G];
  const auto at = [&](int64_t j) {
    for (int h = 0; h < G; ++h) dst[h] = a.s[h] + j;
    return dst;
  };
  for (; j0 + kC <= j1; j0 += kC) score_chunk<S, G, kC, E>(a, j0, widen, at(j0));
  for (; j0 + 16 <= j1; j0 += 16) score_chunk<S, G, 16, E>(a, j0, widen, at(j0));
  // The rest lies in one tile (j0 a multiple of 16): the cache (and a window's gathered keys)
  // holds the whole tile, so the whole tile's scores are computed into a buffer and its first n
  // kept. Each key's score is its own sum over d ascending: the unused keys change no bit (a
  // loop over the n keys alone, adding through memory, took 13% of decode attention).
  const int64_t n = j1 - j0;
  if (n == 0) return;
  float tile[G][kTile];
  for (int h = 0; h < G; ++h) dst[h] = tile[h];
  score_chunk<S, G, kTile, E>(a, j0, widen, dst);
  for (int h = 0; h < G; ++h)
    for (int64_t j = 0; j < n; ++j) a.s[h][j0 + j] = tile[h][j];
}

// Value rows per block of the output: each block's rows are read by every dimension chunk in
// turn (the first from memory, the rest from L1: 8 KiB of F16 rows of 64), where a pass over all
// rows per chunk read a KV head's values from memory once per chunk (4000 rows of 64 F16 values
// are 512 KiB, more than L2; twice the value traffic with AVX2's 16-dimension chunks).
inline constexpr int64_t kValueBlock = 64;

// output_chunk over dimensions [d, d1) of rows [j0, j1) in the largest chunks that fit, up to
// fewer than 16 left; returns where they end. Always inlined, and no lambda between: the widening
// function reaches output_chunk as the constant it is (through a closure GCC called it through
// the pointer, once a value row, and SmolLM2's output phase took 1.8x its time).
template <class S, int G, class E, class Widen>
[[gnu::always_inline]] inline int64_t output_chunks(const AttnItem& a, int64_t d, int64_t d1, int64_t j0, int64_t j1, Widen widen) {
  constexpr int64_t kD = dim_chunk<S, G>();
  for (; d + kD <= d1; d += kD) output_chunk<S, G, kD, E>(a, d, j0, j1, widen);
  if constexpr (kD > 32)
    for (; d + 32 <= d1; d += 32) output_chunk<S, G, 32, E>(a, d, j0, j1, widen);
  if constexpr (kD > 16)
    for (; d + 16 <= d1; d += 16) output_chunk<S, G, 16, E>(a, d, j0, j1, widen);
  return d;
}

// Output dimensions [d0, d1) (d0 a multiple of the chunk or of 16; d1 = hd or a multiple of 16).
template <class S, int G, class E, class Widen>
inline void output_range(const AttnItem& a, int64_t d0, int64_t d1, Widen widen) {
  for (int64_t j0 = 0; j0 < a.len; j0 += kValueBlock) {
    const int64_t j1 = std::min(a.len, j0 + kValueBlock);
    const int64_t d = output_chunks<S, G, E>(a, d0, d1, j0, j1, widen);
    // The rest: fewer than 16 dimensions (a head dimension not a multiple of 16), element by element.
    const int64_t n = d1 - d;
    if (n == 0) continue;
    if (j0 == 0)
      for (int h = 0; h < G; ++h)
        for (int64_t e = d; e < d1; ++e) a.o[h][e] = 0.0f;
    for (int64_t j = j0; j < j1; ++j) {
      const E* vj = static_cast<const E*>(a.V) + j * a.hd + d;
      float v[16];
      for (int64_t e = 0; e < n; ++e) v[e] = elem(vj, e, a.v_mul);
      for (int h = 0; h < G; ++h) {
        const float w = a.s[h][j];
        float* __restrict o = a.o[h] + d;
        for (int64_t e = 0; e < n; ++e) o[e] = o[e] + w * v[e];
      }
    }
  }
}

// S: the ISA's register shape (key_chunk, dim_chunk above). The order per key and per dimension
// never changes, however the keys and dimensions are cut into ranges and chunks.
template <class S, int G, class E, class ExpShifted, class WidenK, class WidenV>
inline void attention_group(const AttnItem& a, ExpShifted exp_shifted, WidenK widen_k, WidenV widen_v) {
  scores_range<S, G, E>(a, 0, a.len, widen_k);  // for each key j, sum over d ascending of q[d] * K[d][j]
  softmax_rows<S::kW, G>(a.s, a.len, a.scale, exp_shifted);
  output_range<S, G, E>(a, 0, a.hd, widen_v);  // for each value row j ascending, o[d] += w[j] * V[j][d]
}

// The three phases alone, for decoding one token split across threads by keys, by heads and by
// dimensions (attention.cpp): the same arithmetic as attention_group.
enum class AttnPhase { scores, softmax, output };
template <class S, int G, class E, class ExpShifted, class WidenK, class WidenV>
inline void attention_phase_group(const AttnItem& a, AttnPhase phase, int64_t b, int64_t e, ExpShifted exp_shifted,
                                  WidenK widen_k, WidenV widen_v) {
  switch (phase) {
    case AttnPhase::scores: scores_range<S, G, E>(a, b, e, widen_k); break;
    case AttnPhase::softmax: softmax_rows<S::kW, G>(a.s, a.len, a.scale, exp_shifted); break;
    case AttnPhase::output: output_range<S, G, E>(a, b, e, widen_v); break;
  }
}
template <class S, class E, class ExpShifted, class WidenK, class WidenV>
inline void attention_phase_typed(const AttnItem& a, AttnPhase phase, int64_t b, int64_t e, ExpShifted exp_shifted,
                                  WidenK widen_k, WidenV widen_v) {
  switch (a.g) {
    case 1: attention_phase_group<S, 1, E>(a, phase, b, e, exp_shifted, widen_k, widen_v); break;
    case 2: attention_phase_group<S, 2, E>(a, phase, b, e, exp_shifted, widen_k, widen_v); break;
    case 3: attention_phase_group<S, 3, E>(a, phase, b, e, exp_shifted, widen_k, widen_v); break;
    default: attention_phase_group<S, 4, E>(a, phase, b, e, exp_shifted, widen_k, widen_v); break;
  }
}

// Widen16: widens 16 F16 values (a function); Widen8: a functor type built from a float mul
// (256 * scale) whose call widens 16 E4M3 bytes at it, one for the keys and one for the values.
template <class S, class Widen8, class ExpShifted, class Widen16>
inline void attention_phase(const AttnItem& a, AttnPhase phase, int64_t b, int64_t e, ExpShifted exp_shifted,
                            Widen16 widen16) {
  if (a.elem == kElemF16) attention_phase_typed<S, uint16_t>(a, phase, b, e, exp_shifted, widen16, widen16);
  else if (a.elem == kElemE4m3)
    attention_phase_typed<S, uint8_t>(a, phase, b, e, exp_shifted, Widen8{a.k_mul}, Widen8{a.v_mul});
  else attention_phase_typed<S, float>(a, phase, b, e, exp_shifted, widen16, widen16);
}

template <class S, class E, class ExpShifted, class WidenK, class WidenV>
inline void attention_item_typed(const AttnItem& a, ExpShifted exp_shifted, WidenK widen_k, WidenV widen_v) {
  switch (a.g) {
    case 1: attention_group<S, 1, E>(a, exp_shifted, widen_k, widen_v); break;
    case 2: attention_group<S, 2, E>(a, exp_shifted, widen_k, widen_v); break;
    case 3: attention_group<S, 3, E>(a, exp_shifted, widen_k, widen_v); break;
    default: attention_group<S, 4, E>(a, exp_shifted, widen_k, widen_v); break;
  }
}

template <class S, class Widen8, class ExpShifted, class Widen16>
inline void attention_item(const AttnItem& a, ExpShifted exp_shifted, Widen16 widen16) {
  if (a.elem == kElemF16) attention_item_typed<S, uint16_t>(a, exp_shifted, widen16, widen16);
  else if (a.elem == kElemE4m3) attention_item_typed<S, uint8_t>(a, exp_shifted, Widen8{a.k_mul}, Widen8{a.v_mul});
  else attention_item_typed<S, float>(a, exp_shifted, widen16, widen16);
}

// SwiGLU in place: g[i] = silu(g[i]) * u[i] (pinned SiLU, float product).
inline void swiglu(float* __restrict g, const float* __restrict u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = pinned::silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4
