// Activation quantizers of the integer-exact modes (SPEC.md section 5).
//
// a16q8: per 256-value block (the last one shorter when n_in % 256 != 0), m is the signed value of
// the FIRST element of largest magnitude (so the result does not depend on a search order), and
//   iscale = -127 / m,  q = min(127, round_half_even(x * iscale)),  d = 1 / iscale (float32).
// |x| <= |m| gives |x * iscale| <= 127 (float rounding can reach 127 exactly, never beyond), so q
// fits int8; the min() only matters for an element equal to -m, whose product is exactly +127.
//
// w4a4: the weight quantizer's per-16 step (quantize_group) with scale2 := input_scale.
#include <cmath>

#include "nvfp4/codec.h"
#include "nvfp4/kernels_ref.h"
#include "nvfp4/quantize.h"

namespace nvfp4 {

void quantize_act_q8(const float* x, int64_t n_in, Q8Activations& out) {
  out.n_in = n_in;
  out.q.resize(static_cast<size_t>(n_in));
  const int64_t nb = out.blocks();
  out.d.assign(static_cast<size_t>(nb), 0.0f);
  out.zero.assign(static_cast<size_t>(nb), 0);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t lo = b * kQ8Block;
    const int64_t hi = std::min<int64_t>(n_in, lo + kQ8Block);
    float m = 0.0f, amax = 0.0f;
    for (int64_t i = lo; i < hi; ++i) {
      const float a = std::fabs(x[i]);
      if (a > amax) { amax = a; m = x[i]; }
    }
    if (amax == 0.0f) {
      out.zero[b] = 1;
      for (int64_t i = lo; i < hi; ++i) out.q[i] = 0;
      continue;
    }
    const float iscale = -127.0f / m;
    for (int64_t i = lo; i < hi; ++i) {
      out.q[i] = static_cast<int8_t>(std::min(127, round_half_even(x[i] * iscale)));
    }
    out.d[b] = 1.0f / iscale;
  }
}

void quantize_act_fp4(const float* x, int64_t n_in, float input_scale, Fp4Activations& out) {
  out.n_in = n_in;
  out.input_scale = input_scale;
  out.codes.resize(static_cast<size_t>(n_in / 2));
  out.scales.resize(static_cast<size_t>(n_in / kGroup));
  for (int64_t g = 0; g < n_in / kGroup; ++g) {
    out.scales[g] = quantize_group(x + g * kGroup, input_scale, out.codes.data() + g * (kGroup / 2));
  }
}

}  // namespace nvfp4
