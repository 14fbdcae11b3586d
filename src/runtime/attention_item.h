// The body of attention for one (token, head) and SwiGLU, compiled three times (attention.cpp: baseline
// x86-64; attention_item_avx2.cpp; attention_item_avx512.cpp) so that the compiler vectorizes its
// elementwise loops at each width. The pinned exp does not auto-vectorize (its clamps and int64
// conversion stay scalar), so each copy passes its own softmax-numerator step: the scalar loop
// below, or pinned_exp_avx2.h / pinned_exp_avx512.h, which do the same IEEE operations per lane.
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

struct AttnItem {
  const float* K;  // [hd][ks]: key d of position j at K[d * ks + j]
  int64_t ks;
  const float* V;  // [len][hd]
  const float* q;  // [hd]
  int64_t len, hd;
  float scale;
  float* s;  // scratch [len]
  float* o;  // [hd]
};

// out[j] = float(exp(double(s[j] - mx))) for j < n; out may be s.
inline void exp_shifted_scalar_body(const float* s, float mx, float* out, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(pinned::exp(static_cast<double>(s[j] - mx)));
}

// Scores of keys [j0, j0 + C): per key, d ascending, held in a local array (registers) across d.
template <int64_t C>
inline void score_chunk(const AttnItem& a, int64_t j0, float* __restrict s) {
  float acc[C];
  for (int64_t jj = 0; jj < C; ++jj) acc[jj] = 0.0f;
  for (int64_t d = 0; d < a.hd; ++d) {
    const float qd = a.q[d];
    const float* __restrict kd = a.K + d * a.ks + j0;
    for (int64_t jj = 0; jj < C; ++jj) acc[jj] = acc[jj] + qd * kd[jj];
  }
  for (int64_t jj = 0; jj < C; ++jj) s[j0 + jj] = acc[jj];
}

// kKeys / kDims: keys (scores) and head dimensions (output) per register-held chunk, chosen per
// ISA: kKeys gives 8 independent add chains (8 x 16 lanes on AVX-512, 8 x 8 on AVX2, 8 x 4 on
// SSE2); kDims must not exceed the head dimension (64 here) to be used at all. The order per key
// and per dimension never changes.
template <int64_t kKeys, int64_t kDims, class ExpShifted>
inline void attention_item(const AttnItem& a, ExpShifted exp_shifted) {
  float* __restrict s = a.s;
  const int64_t len = a.len, hd = a.hd;
  // Scores: for each key j, sum over d ascending of q[d] * K[d][j], then times the scale. Keys in
  // chunks of kKeys held in a local array across the d loop (registers, once vectorized), so s
  // is not re-read and re-written per d; the sum per key is the same.
  int64_t j0 = 0;
  for (; j0 + kKeys <= len; j0 += kKeys) score_chunk<kKeys>(a, j0, s);
  for (; j0 + 16 <= len; j0 += 16) score_chunk<16>(a, j0, s);
  for (int64_t j = j0; j < len; ++j) s[j] = 0.0f;
  for (int64_t d = 0; d < hd; ++d) {
    const float qd = a.q[d];
    const float* __restrict kd = a.K + d * a.ks;
    for (int64_t j = j0; j < len; ++j) s[j] = s[j] + qd * kd[j];
  }
  // Scale, and the maximum in 16 lanes (which of two equal zeros wins cannot change s - max).
  float lane_max[16];
  for (int l = 0; l < 16; ++l) lane_max[l] = -INFINITY;
  int64_t jm = 0;
  for (; jm + 16 <= len; jm += 16)
    for (int l = 0; l < 16; ++l) {
      const float v = s[jm + l] * a.scale;
      s[jm + l] = v;
      lane_max[l] = lane_max[l] < v ? v : lane_max[l];
    }
  for (; jm < len; ++jm) {
    s[jm] = s[jm] * a.scale;
    lane_max[0] = lane_max[0] < s[jm] ? s[jm] : lane_max[0];
  }
  float mx = -INFINITY;
  for (int l = 0; l < 16; ++l) mx = mx < lane_max[l] ? lane_max[l] : mx;
  // Softmax: exp in double by the pinned function, the sum in double with j ascending.
  exp_shifted(s, mx, s, len);
  double sum = 0.0;
  for (int64_t j = 0; j < len; ++j) sum += s[j];
  const double inv = 1.0 / sum;
  for (int64_t j = 0; j < len; ++j) s[j] = static_cast<float>(s[j] * inv);
  // Output: for each value row j ascending, o[d] += w[j] * V[j][d]; d in chunks of kDims held
  // in a local array across the j loop.
  float* __restrict o = a.o;
  int64_t d0 = 0;
  for (; d0 + kDims <= hd; d0 += kDims) {
    float acc[kDims];
    for (int64_t dd = 0; dd < kDims; ++dd) acc[dd] = 0.0f;
    for (int64_t j = 0; j < len; ++j) {
      const float w = s[j];
      const float* __restrict vj = a.V + j * hd + d0;
      for (int64_t dd = 0; dd < kDims; ++dd) acc[dd] = acc[dd] + w * vj[dd];
    }
    for (int64_t dd = 0; dd < kDims; ++dd) o[d0 + dd] = acc[dd];
  }
  for (int64_t d = d0; d < hd; ++d) o[d] = 0.0f;
  for (int64_t j = 0; j < len; ++j) {
    const float w = s[j];
    const float* __restrict vj = a.V + j * hd;
    for (int64_t d = d0; d < hd; ++d) o[d] = o[d] + w * vj[d];
  }
}

// SwiGLU in place: g[i] = silu(g[i]) * u[i] (pinned SiLU, float product).
inline void swiglu(float* __restrict g, const float* __restrict u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = pinned::silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4
