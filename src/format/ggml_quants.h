// ggml's block-quantized formats, dequantized to float32 (internal).
#pragma once
#include <cstdint>

namespace nvfp4 {
// Returns false when `type` is not one of the block formats implemented here.
bool dequantize_row_quant(uint32_t type, const uint8_t* src, float* dst, int64_t n);
}  // namespace nvfp4
