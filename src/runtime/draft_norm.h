// The drafters' RMSNorm (the DFlash assistant's and Gemma 4's assistant's layers): out = w * x /
// sqrt(mean(x^2) + eps) over rows of n, in float, the sum of squares ascending (in place allowed).
// Drafts never change the output, so this need not be the target's pinned norm; it is the same
// bits on every run and ISA all the same (plain float, one order).
#pragma once
#include <cmath>
#include <cstdint>

namespace nvfp4 {

inline void draft_rmsnorm(const float* x, const float* w, float* out, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    float ss = 0.0f;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) o[i] = w[i] * (xr[i] * inv);
  }
}

}  // namespace nvfp4
