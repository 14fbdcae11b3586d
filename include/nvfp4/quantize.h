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

}  // namespace nvfp4
