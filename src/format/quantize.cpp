// The quantizer of SPEC.md section 4, written to equal ModelOpt's NVFP4QTensor bit for bit.
// Every step is a float32 operation in the order ModelOpt's PyTorch code performs it:
//   scale2 = amax(|W|) / 2688                         (2688 = 6 * 448: E2M1 max times E4M3 max)
//   s      = amax_b / (6 * scale2); 0 -> 1; clamp [2^-9, 448]; E4M3 round-nearest-even
//   v      = w / (e4m3(s) * scale2);  code = E2M1(v), ties to the even code, sign from v < 0
#include "nvfp4/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

void check_finite(const float* w, int64_t count, const std::string& name) {
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(w[i])) {
      throw Error("", name, "quantizer input must be finite", "a finite float",
                  std::string(std::isnan(w[i]) ? "NaN" : "Inf") + " at flat index " +
                      std::to_string(i));
    }
  }
}

void check_shape(int64_t n_out, int64_t n_in, const std::string& name) {
  if (n_out < 0 || n_in <= 0 || n_in % kGroup != 0) {
    throw Error("", name, "NVFP4 needs n_in to be a positive multiple of 16",
                "n_in % 16 == 0", "n_in = " + std::to_string(n_in));
  }
}

}  // namespace

float tensor_scale2(const float* w, int64_t count) {
  float amax = 0.0f;
  for (int64_t i = 0; i < count; ++i) amax = std::max(amax, std::fabs(w[i]));
  if (amax == 0.0f) return 1.0f;
  return amax / 2688.0f;
}

uint8_t quantize_group(const float* w16, float scale2, uint8_t* codes8) {
  float amax = 0.0f;
  for (int j = 0; j < kGroup; ++j) amax = std::max(amax, std::fabs(w16[j]));
  const float denom = 6.0f * scale2;
  float s = amax / denom;
  if (s == 0.0f) s = 1.0f;
  s = std::clamp(s, 0.001953125f, 448.0f);  // [2^-9, 448]
  const uint8_t sbyte = float_to_e4m3(s);
  const float step = e4m3_to_float(sbyte) * scale2;
  for (int j = 0; j < kGroup; j += 2) {
    const uint8_t lo = float_to_e2m1(w16[j] / step);
    const uint8_t hi = float_to_e2m1(w16[j + 1] / step);
    codes8[j / 2] = static_cast<uint8_t>(lo | (hi << 4));
  }
  return sbyte;
}

namespace {
RowMatrix quantize_checked(const float* w, int64_t n_out, int64_t n_in, float scale2) {
  RowMatrix m;
  m.n_out = n_out;
  m.n_in = n_in;
  m.scale2 = scale2;
  m.codes.resize(static_cast<size_t>(n_out * n_in / 2));
  m.scales.resize(static_cast<size_t>(n_out * n_in / kGroup));
  const int64_t groups = n_out * n_in / kGroup;
  for (int64_t g = 0; g < groups; ++g) {
    m.scales[g] = quantize_group(w + g * kGroup, scale2, m.codes.data() + g * (kGroup / 2));
  }
  return m;
}
}  // namespace

RowMatrix quantize_with_scale2(const float* w, int64_t n_out, int64_t n_in, float scale2,
                               const std::string& name) {
  check_shape(n_out, n_in, name);
  check_finite(w, n_out * n_in, name);
  return quantize_checked(w, n_out, n_in, scale2);
}

RowMatrix quantize(const float* w, int64_t n_out, int64_t n_in, const std::string& name) {
  check_shape(n_out, n_in, name);
  check_finite(w, n_out * n_in, name);
  const float scale2 = tensor_scale2(w, n_out * n_in);
  if (scale2 == 0.0f) {
    // amax > 0 (an all-zero tensor gets 1) yet amax / 2688 rounds to 0 in float32. ModelOpt
    // writes that 0 (and scale 448, code 7 everywhere); no loader accepts a zero tensor scale.
    float amax = 0.0f;
    for (int64_t i = 0; i < n_out * n_in; ++i) amax = std::max(amax, std::fabs(w[i]));
    char buf[64];
    std::snprintf(buf, sizeof buf, "amax(|W|) = %a", static_cast<double>(amax));
    throw Error("", name, "tensor scale underflows: amax(|W|) / 2688 rounds to 0 in float32",
                "amax(|W|) > 2688 * 2^-150 (about 1.9e-42)", buf);
  }
  return quantize_checked(w, n_out, n_in, scale2);
}

void dequantize(const RowView& m, float* out) {
  for (int64_t r = 0; r < m.n_out; ++r) {
    const uint8_t* sc = m.row_scales(r);
    for (int64_t i = 0; i < m.n_in; ++i) {
      out[r * m.n_in + i] = (e2m1_to_float(m.code(r, i)) * e4m3_to_float(sc[i / kGroup])) * m.scale2;
    }
  }
}

void dequantize_f64(const RowView& m, double* out) {
  for (int64_t r = 0; r < m.n_out; ++r) {
    const uint8_t* sc = m.row_scales(r);
    for (int64_t i = 0; i < m.n_in; ++i) {
      out[r * m.n_in + i] = (static_cast<double>(e2m1_to_float(m.code(r, i))) *
                             static_cast<double>(e4m3_to_float(sc[i / kGroup]))) *
                            static_cast<double>(m.scale2);
    }
  }
}

}  // namespace nvfp4
