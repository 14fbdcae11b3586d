// The per-block scale search of `convert --quantize-method search`: for each 16-value block, the
// E4M3 scale byte near the rtn byte that minimises the error weighted by the input channels'
// importance (the activations' second moments on calibration text), codes re-rounded for it.
// The tensor scale stays ModelOpt's (amax / 2688, or the fused group's), so the output is ordinary
// NVFP4. Scalar float64 throughout: no result depends on the ISA or on how rows are split.
#include <algorithm>
#include <cmath>
#include <string>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/quantize.h"

namespace nvfp4 {

double group_error(const float* w16, const float* h16, float scale2, uint8_t sbyte, const uint8_t* codes8) {
  const float sc = e4m3_to_float(sbyte);
  double err = 0.0;
  for (int j = 0; j < kGroup; ++j) {
    const uint8_t c = (j & 1) ? static_cast<uint8_t>(codes8[j / 2] >> 4) : static_cast<uint8_t>(codes8[j / 2] & 0xF);
    const float q = (e2m1_to_float(c) * sc) * scale2;  // the decoder's float order
    const double d = static_cast<double>(w16[j]) - static_cast<double>(q);
    err += (h16 ? static_cast<double>(h16[j]) : 1.0) * (d * d);
  }
  return err;
}

namespace {
void round_codes(const float* w16, float step, uint8_t* codes8) {
  for (int j = 0; j < kGroup; j += 2) {
    const uint8_t lo = float_to_e2m1(w16[j] / step);
    const uint8_t hi = float_to_e2m1(w16[j + 1] / step);
    codes8[j / 2] = static_cast<uint8_t>(lo | (hi << 4));
  }
}
}  // namespace

uint8_t quantize_group_search(const float* w16, const float* h16, float scale2, int radius, uint8_t* codes8) {
  const uint8_t rtn = quantize_group(w16, scale2, codes8);
  double best = group_error(w16, h16, scale2, rtn, codes8);
  uint8_t best_byte = rtn;
  if (best == 0.0) return rtn;
  uint8_t trial[kGroup / 2], keep[kGroup / 2];
  std::copy(codes8, codes8 + kGroup / 2, keep);
  const int lo = std::max(1, rtn - radius), hi = std::min(0x7E, rtn + radius);
  for (int b = lo; b <= hi; ++b) {
    if (b == rtn) continue;
    round_codes(w16, e4m3_to_float(static_cast<uint8_t>(b)) * scale2, trial);
    const double e = group_error(w16, h16, scale2, static_cast<uint8_t>(b), trial);
    if (e < best) {  // strictly: ties keep the earlier (rtn first)
      best = e;
      best_byte = static_cast<uint8_t>(b);
      std::copy(trial, trial + kGroup / 2, keep);
    }
  }
  std::copy(keep, keep + kGroup / 2, codes8);
  return best_byte;
}

RowMatrix quantize_search(const float* w, int64_t n_out, int64_t n_in, float scale2, const float* importance,
                          int radius, const std::string& name) {
  if (n_out < 0 || n_in <= 0 || n_in % kGroup != 0) {
    throw Error("", name, "NVFP4 needs n_in to be a positive multiple of 16", "n_in % 16 == 0",
                "n_in = " + std::to_string(n_in));
  }
  if (!(scale2 > 0.0f) || !std::isfinite(scale2)) {
    throw Error("", name, "tensor scale must be positive and finite", "scale2 > 0", std::to_string(scale2));
  }
  for (int64_t i = 0; i < n_out * n_in; ++i) {
    if (!std::isfinite(w[i])) {
      throw Error("", name, "quantizer input must be finite", "a finite float",
                  std::string(std::isnan(w[i]) ? "NaN" : "Inf") + " at flat index " + std::to_string(i));
    }
  }
  if (importance) {
    for (int64_t i = 0; i < n_in; ++i) {
      if (!(importance[i] >= 0.0f) || !std::isfinite(importance[i])) {
        throw Error("", name, "channel importance must be finite and >= 0", ">= 0",
                    std::to_string(importance[i]) + " at channel " + std::to_string(i));
      }
    }
  }
  RowMatrix m;
  m.n_out = n_out;
  m.n_in = n_in;
  m.scale2 = scale2;
  m.codes.resize(static_cast<size_t>(n_out * n_in / 2));
  m.scales.resize(static_cast<size_t>(n_out * n_in / kGroup));
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t g = 0; g < n_in / kGroup; ++g) {
      const int64_t k = r * (n_in / kGroup) + g;
      m.scales[static_cast<size_t>(k)] =
          quantize_group_search(w + k * kGroup, importance ? importance + g * kGroup : nullptr, scale2, radius,
                                m.codes.data() + k * (kGroup / 2));
    }
  }
  return m;
}

}  // namespace nvfp4
