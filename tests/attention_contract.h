// Decode attention for one query head written out as docs/DETERMINISM.md orders it, over any
// cache layout: per key j, s[j] = sum over d ascending of q[d] * key(j, d) in float, times
// `scale`; the maximum; float(exp(double(s[j] - max))) (the pinned exp); their sum in double, j
// ascending; s[j] * (1 / sum) in double, rounded to float, +0 where below 2^-101 (kTinyWeight,
// attention_item.h); then per dimension d, o[d] = sum over
// j ascending of s[j] * value(j, d) in float. key and value return the cache's entries as the
// kernels widen them. Shared by the tests that hold the runtime's attention and the kernels'
// chunk shapes to the contract.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/pinned_math.h"

namespace nvfp4::test {

// tiny: when given, counts the weights in (0, 2^-101), which the contract makes +0.
template <class Key, class Value>
void contract_head(const float* q, int64_t hd, int64_t len, float scale, Key key, Value value, float* o,
                   int64_t* tiny = nullptr) {
  std::vector<float> w(static_cast<size_t>(len));
  float mx = -INFINITY;
  for (int64_t j = 0; j < len; ++j) {
    float acc = 0.0f;
    for (int64_t d = 0; d < hd; ++d) acc = acc + q[d] * key(j, d);
    w[static_cast<size_t>(j)] = acc * scale;
    mx = mx < w[static_cast<size_t>(j)] ? w[static_cast<size_t>(j)] : mx;
  }
  double sum = 0.0;
  for (float& x : w) {
    x = static_cast<float>(pinned::exp(static_cast<double>(x - mx)));
    sum += x;
  }
  const double inv = 1.0 / sum;
  for (float& x : w) {
    x = static_cast<float>(x * inv);
    if (x < 0x1p-101f) {
      if (tiny && x > 0.0f) ++*tiny;
      x = 0.0f;
    }
  }
  for (int64_t d = 0; d < hd; ++d) {
    float acc = 0.0f;
    for (int64_t j = 0; j < len; ++j) acc = acc + w[static_cast<size_t>(j)] * value(j, d);
    o[d] = acc;
  }
}

}  // namespace nvfp4::test
