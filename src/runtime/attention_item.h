// The body of attention for one token and a group of query heads that share a KV head (GQA), and
// SwiGLU, compiled three times (attention.cpp: baseline
// x86-64; attention_item_avx2.cpp; attention_item_avx512.cpp) so that the compiler vectorizes its
// elementwise loops at each width. The pinned exp does not auto-vectorize (its clamps and int64
// conversion stay scalar), so each copy passes its own softmax-numerator step: the scalar loop
// below, or pinned_exp_avx2.h / pinned_exp_avx512.h, which do the same IEEE operations per lane.
// Grouping heads only lets one load of a key or value row serve several heads and gives more
// independent add chains; each head's arithmetic is the one-head order below.
// No loop here reassociates a sum (the build forbids contraction and fast-math), so every copy
// gives the same bits; docs/DETERMINISM.md lists the order.
// Internal linkage on purpose: each translation unit keeps its own copy.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/pinned_math.h"

namespace nvfp4 {
namespace {

inline constexpr int kMaxGroup = 4;  // heads per item; larger GQA groups are split

inline constexpr int64_t kTile = 16;  // positions per key tile (attention.h kKeyTile)

// Software prefetch (no effect on any result): the score chunks read the next chunk's key rows
// and the output chunks the value row kPrefetchRows ahead while they compute; the hardware
// prefetcher alone left decode attention at about 60% of the read bandwidth (SmolLM2, 512
// positions: 8.9 of 14.3 GB/s on one thread, the weight matrices at 100%).
inline constexpr int64_t kPrefetchRows = 16;

struct AttnItem {
  const float* K;  // tiled: key d of position j at K[((j / kTile) * hd + d) * kTile + j % kTile]
  const float* V;  // [len][hd]
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

// Scores of keys [j0, j0 + C) (j0 and C multiples of kTile) for the G heads: per key, d
// ascending, in local arrays (registers) across d, one load of each tile row for all heads.
// noinline: inlined into the item function, GCC 12 kept the G = 1 accumulators on the stack.
template <int G, int64_t C>
__attribute__((noinline)) void score_chunk(const AttnItem& a, int64_t j0) {
  static_assert(C % kTile == 0);
  constexpr int64_t T = kTile, NT = C / T;  // keys per tile, tiles in the chunk
  const float* __restrict kt = a.K + (j0 / kTile) * a.hd * kTile + j0 % kTile;
  float acc[G][NT][T];
  for (int h = 0; h < G; ++h)
    for (int64_t t = 0; t < NT; ++t)
      for (int64_t jj = 0; jj < T; ++jj) acc[h][t][jj] = 0.0f;
  for (int64_t d = 0; d < a.hd; ++d) {
    // The same row of the next chunk's tiles (one 64-byte line each): a chunk's C x hd keys ahead.
    for (int64_t t = 0; t < NT; ++t) __builtin_prefetch(kt + ((NT + t) * a.hd + d) * kTile, 0, 3);
    for (int h = 0; h < G; ++h) {
      const float qd = a.q[h][d];
      for (int64_t t = 0; t < NT; ++t) {
        const float* __restrict kd = kt + (t * a.hd + d) * kTile;
        for (int64_t jj = 0; jj < T; ++jj) acc[h][t][jj] = acc[h][t][jj] + qd * kd[jj];
      }
    }
  }
  for (int h = 0; h < G; ++h)
    for (int64_t t = 0; t < NT; ++t)
      for (int64_t jj = 0; jj < T; ++jj) a.s[h][j0 + t * T + jj] = acc[h][t][jj];
}

// Output dimensions [d0, d0 + C) for the G heads: per dimension, j ascending.
template <int G, int64_t C>
__attribute__((noinline)) void output_chunk(const AttnItem& a, int64_t d0) {
  float acc[G][C];
  for (int h = 0; h < G; ++h)
    for (int64_t dd = 0; dd < C; ++dd) acc[h][dd] = 0.0f;
  for (int64_t j = 0; j < a.len; ++j) {
    const float* __restrict vj = a.V + j * a.hd + d0;
    // The row kPrefetchRows ahead, one 64-byte line (16 floats) at a time.
    for (int64_t dd = 0; dd < C; dd += 16) __builtin_prefetch(vj + kPrefetchRows * a.hd + dd, 0, 3);
    for (int h = 0; h < G; ++h) {
      const float w = a.s[h][j];
      for (int64_t dd = 0; dd < C; ++dd) acc[h][dd] = acc[h][dd] + w * vj[dd];
    }
  }
  for (int h = 0; h < G; ++h)
    for (int64_t dd = 0; dd < C; ++dd) a.o[h][d0 + dd] = acc[h][dd];
}

// Softmax of one head's scores in place: scale, max, pinned exp, sum in double j ascending,
// times 1/sum.
template <class ExpShifted>
inline void softmax_row(float* __restrict s, int64_t len, float scale, ExpShifted exp_shifted) {
  // Scale, and the maximum in 16 lanes (which of two equal zeros wins cannot change s - max).
  float lane_max[16];
  for (int l = 0; l < 16; ++l) lane_max[l] = -INFINITY;
  int64_t j = 0;
  for (; j + 16 <= len; j += 16)
    for (int l = 0; l < 16; ++l) {
      const float v = s[j + l] * scale;
      s[j + l] = v;
      lane_max[l] = lane_max[l] < v ? v : lane_max[l];
    }
  for (; j < len; ++j) {
    s[j] = s[j] * scale;
    lane_max[0] = lane_max[0] < s[j] ? s[j] : lane_max[0];
  }
  float mx = -INFINITY;
  for (int l = 0; l < 16; ++l) mx = mx < lane_max[l] ? lane_max[l] : mx;
  exp_shifted(s, mx, s, len);
  double sum = 0.0;
  for (int64_t i = 0; i < len; ++i) sum += s[i];
  const double inv = 1.0 / sum;
  for (int64_t i = 0; i < len; ++i) s[i] = static_cast<float>(s[i] * inv);
}

// kKeys / kDims: keys (scores) and head dimensions (output) per register-held chunk for one head,
// chosen per ISA (8 x 16 lanes of keys on AVX-512, 8 x 8 on AVX2, 8 x 4 on SSE2); with G heads
// the key chunk is halved to fit the registers. kDims must not exceed the head dimension (64
// here) to be used at all. The order per key and per dimension never changes.
// (Items of 8 heads, reading a key once for a whole Qwen3 group, measured no faster than 4.)
// Scores of keys [j0, j1) (j0 a multiple of 16; j1 = len or a multiple of 16).
template <int G, int64_t kKeys>
inline void scores_range(const AttnItem& a, int64_t j0, int64_t j1) {
  constexpr int64_t kC = G == 1 ? kKeys : kKeys / 2;
  for (; j0 + kC <= j1; j0 += kC) score_chunk<G, kC>(a, j0);
  for (; j0 + 16 <= j1; j0 += 16) score_chunk<G, 16>(a, j0);
  // The rest lies in one tile (j0 a multiple of 16).
  for (int h = 0; h < G; ++h) {
    float* __restrict s = a.s[h] + j0;
    const int64_t n = j1 - j0;
    for (int64_t j = 0; j < n; ++j) s[j] = 0.0f;
    for (int64_t d = 0; d < a.hd; ++d) {
      const float qd = a.q[h][d];
      const float* __restrict kd = a.K + ((j0 / kTile) * a.hd + d) * kTile;
      for (int64_t j = 0; j < n; ++j) s[j] = s[j] + qd * kd[j];
    }
  }
}

// Output dimensions [d0, d1) (d0 a multiple of kDims or of 16; d1 = hd or a multiple of 16).
template <int G, int64_t kDims>
inline void output_range(const AttnItem& a, int64_t d0, int64_t d1) {
  for (; d0 + kDims <= d1; d0 += kDims) output_chunk<G, kDims>(a, d0);
  if constexpr (kDims > 32)
    for (; d0 + 32 <= d1; d0 += 32) output_chunk<G, 32>(a, d0);
  for (; d0 + 16 <= d1; d0 += 16) output_chunk<G, 16>(a, d0);
  for (int h = 0; h < G; ++h) {
    float* __restrict o = a.o[h];
    const float* __restrict s = a.s[h];
    for (int64_t d = d0; d < d1; ++d) o[d] = 0.0f;
    for (int64_t j = 0; j < a.len; ++j) {
      const float w = s[j];
      const float* __restrict vj = a.V + j * a.hd;
      for (int64_t d = d0; d < d1; ++d) o[d] = o[d] + w * vj[d];
    }
  }
}

// kKeys / kDims: keys (scores) and head dimensions (output) per register-held chunk for one head,
// chosen per ISA (8 x 16 lanes of keys on AVX-512, 8 x 8 on AVX2, 8 x 4 on SSE2); with G heads
// the key chunk is halved to fit the registers. The order per key and per dimension never
// changes, however the keys and dimensions are cut into ranges and chunks.
template <int G, int64_t kKeys, int64_t kDims, class ExpShifted>
inline void attention_group(const AttnItem& a, ExpShifted exp_shifted) {
  scores_range<G, kKeys>(a, 0, a.len);  // for each key j, sum over d ascending of q[d] * K[d][j]
  for (int h = 0; h < G; ++h) softmax_row(a.s[h], a.len, a.scale, exp_shifted);
  output_range<G, kDims>(a, 0, a.hd);  // for each value row j ascending, o[d] += w[j] * V[j][d]
}

// The three phases alone, for decoding one token split across threads by keys, by heads and by
// dimensions (attention.cpp): the same arithmetic as attention_group.
enum class AttnPhase { scores, softmax, output };
template <int64_t kKeys, int64_t kDims, class ExpShifted>
inline void attention_phase(const AttnItem& a, AttnPhase phase, int64_t b, int64_t e, ExpShifted exp_shifted) {
  switch (phase) {
    case AttnPhase::scores:
      switch (a.g) {
        case 1: scores_range<1, kKeys>(a, b, e); break;
        case 2: scores_range<2, kKeys>(a, b, e); break;
        case 3: scores_range<3, kKeys>(a, b, e); break;
        default: scores_range<4, kKeys>(a, b, e); break;
      }
      break;
    case AttnPhase::softmax:
      for (int h = 0; h < a.g; ++h) softmax_row(a.s[h], a.len, a.scale, exp_shifted);
      break;
    case AttnPhase::output:
      switch (a.g) {
        case 1: output_range<1, kDims>(a, b, e); break;
        case 2: output_range<2, kDims>(a, b, e); break;
        case 3: output_range<3, kDims>(a, b, e); break;
        default: output_range<4, kDims>(a, b, e); break;
      }
      break;
  }
}

template <int64_t kKeys, int64_t kDims, class ExpShifted>
inline void attention_item(const AttnItem& a, ExpShifted exp_shifted) {
  switch (a.g) {
    case 1: attention_group<1, kKeys, kDims>(a, exp_shifted); break;
    case 2: attention_group<2, kKeys, kDims>(a, exp_shifted); break;
    case 3: attention_group<3, kKeys, kDims>(a, exp_shifted); break;
    default: attention_group<4, kKeys, kDims>(a, exp_shifted); break;
  }
}

// SwiGLU in place: g[i] = silu(g[i]) * u[i] (pinned SiLU, float product).
inline void swiglu(float* __restrict g, const float* __restrict u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = pinned::silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4
