// The body of attention for one (token, head) and SwiGLU, compiled three times (attention.cpp: baseline
// x86-64; attention_item_avx2.cpp; attention_item_avx512.cpp) so that the compiler vectorizes its
// elementwise loops at each width. No loop here reassociates a sum (the build forbids
// contraction and fast-math), so every copy gives the same bits; docs/DETERMINISM.md lists the order.
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

inline void attention_item(const AttnItem& a) {
  float* __restrict s = a.s;
  const int64_t len = a.len, hd = a.hd;
  // Scores: for each key j, sum over d ascending of q[d] * K[d][j], then times the scale.
  for (int64_t j = 0; j < len; ++j) s[j] = 0.0f;
  for (int64_t d = 0; d < hd; ++d) {
    const float qd = a.q[d];
    const float* __restrict kd = a.K + d * a.ks;
    for (int64_t j = 0; j < len; ++j) s[j] = s[j] + qd * kd[j];
  }
  float mx = -INFINITY;
  for (int64_t j = 0; j < len; ++j) {
    s[j] = s[j] * a.scale;
    mx = std::max(mx, s[j]);
  }
  // Softmax: exp in double by the pinned function, the sum in double with j ascending.
  double sum = 0.0;
  for (int64_t j = 0; j < len; ++j) {
    s[j] = static_cast<float>(pinned::exp(static_cast<double>(s[j] - mx)));
    sum += s[j];
  }
  const double inv = 1.0 / sum;
  for (int64_t j = 0; j < len; ++j) s[j] = static_cast<float>(s[j] * inv);
  // Output: for each value row j ascending, o[d] += w[j] * V[j][d].
  float* __restrict o = a.o;
  for (int64_t d = 0; d < hd; ++d) o[d] = 0.0f;
  for (int64_t j = 0; j < len; ++j) {
    const float w = s[j];
    const float* __restrict vj = a.V + j * hd;
    for (int64_t d = 0; d < hd; ++d) o[d] = o[d] + w * vj[d];
  }
}

// SwiGLU in place: g[i] = silu(g[i]) * u[i] (pinned SiLU, float product).
inline void swiglu(float* __restrict g, const float* __restrict u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = pinned::silu(g[i]) * u[i];
}

}  // namespace
}  // namespace nvfp4
