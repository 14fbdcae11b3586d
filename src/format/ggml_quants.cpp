// ggml's block-quantized formats (Q4_0, Q4_1, Q8_0, Q4_K, Q6_K) dequantized to float32.
#include "format/ggml_quants.h"

namespace nvfp4 {

bool dequantize_row_quant(uint32_t, const uint8_t*, float*, int64_t) { return false; }

}  // namespace nvfp4
