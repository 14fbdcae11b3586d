// The quantizer of SPEC.md section 4, bit-equal to NVIDIA ModelOpt's NVFP4QTensor.
#pragma once
#include <cstdint>
#include <string>

#include "nvfp4/matrix.h"

namespace nvfp4 {

// scale2 = amax(|W|) / 2688 in float32; 1 for an all-zero tensor.
float tensor_scale2(const float* w, int64_t count);

// Quantize one 16-value block with a given scale2: writes 8 code bytes (row layout) and returns
// the E4M3 scale byte. Used for weights and (with scale2 := input_scale) for w4a4 activations.
uint8_t quantize_group(const float* w16, float scale2, uint8_t* codes8);

// Quantize W[n_out][n_in] (n_in % 16 == 0). Throws nvfp4::Error naming `name` and the flat index
// of the first NaN/Inf value, or the shape rule that fails, or when amax(|W|) > 0 is so small
// (<= about 1.9e-42) that scale2 = amax / 2688 underflows to 0 (ModelOpt would write scale2 = 0).
RowMatrix quantize(const float* w, int64_t n_out, int64_t n_in, const std::string& name = "");
// The same with a caller-chosen scale2 (ModelOpt's path with a given global amax).
RowMatrix quantize_with_scale2(const float* w, int64_t n_out, int64_t n_in, float scale2,
                               const std::string& name = "");

// Dequantize in the pinned order (e2m1 * e4m3) * scale2, float32. out: [n_out][n_in].
void dequantize(const RowView& m, float* out);
// The same in float64 (exact: the product has at most 30 significant bits).
void dequantize_f64(const RowView& m, double* out);


// ---- Scale search (`convert --quantize-method search`) ----------------------------------------
// The weighted squared error of one decoded block: sum_j h_j (w_j - (e2m1(c_j) * e4m3(s)) * scale2)^2
// in float64, j ascending (h = nullptr: every h_j = 1).
double group_error(const float* w16, const float* h16, float scale2, uint8_t sbyte, const uint8_t* codes8);

// Quantize one block choosing the scale byte among the rtn byte (quantize_group's) and its
// neighbours rtn - radius .. rtn + radius (finite, non-zero E4M3 bytes), codes re-rounded to the
// nearest E2M1 value for each (optimal per value for a diagonal weight). Returns the byte with the
// smallest group_error; the rtn byte unless another is strictly smaller, so the result is never
// worse than rtn. Pure scalar float64 arithmetic: the same bytes on every ISA and thread count.
uint8_t quantize_group_search(const float* w16, const float* h16, float scale2, int radius, uint8_t* codes8);

// quantize_with_scale2 with the per-block search; importance[n_in] (per input channel, >= 0) or
// nullptr for the unweighted error. Same refusals as quantize_with_scale2.
RowMatrix quantize_search(const float* w, int64_t n_out, int64_t n_in, float scale2, const float* importance,
                          int radius, const std::string& name = "");

}  // namespace nvfp4
