// GGML's Q8_0 block format (GGUF type 8), the 8-bit head/embedding of `convert --head q8`:
// per 32 values one IEEE binary16 scale d and 32 int8 codes; x = q * d. llama.cpp reads it.
//
// Quantization (round to nearest, the numbers of ggml's quantize_row_q8_0_ref and of the PyPI
// gguf package's gguf.quants.quantize(.., Q8_0)): per block amax = max |x|, d = amax / 127 (float32
// division), id = d != 0 ? 1 / d : 0, q = round_half_away(x * id) (|x * id| <= 127 up to float
// rounding, which stays <= 127.5: q in [-127, 127]); the stored d is float_to_half(d) (nearest
// even). A file may hold q = -128 (other writers): readers accept the full int8 range.
#pragma once
#include <cstdint>

namespace nvfp4 {

inline constexpr int kQ8_0Block = 32;
struct BlockQ8_0 {
  uint16_t d;        // binary16 scale
  int8_t qs[kQ8_0Block];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 34 bytes (GGUF type 8)");

// Quantizes n values (n % 32 == 0) of x into n / 32 blocks at dst (34 bytes each). x finite.
void quantize_row_q8_0(const float* x, int64_t n, uint8_t* dst);
// Dequantizes n values: q * d, each one exact float product (11 x 8 significant bits).
void dequantize_row_q8_0(const uint8_t* src, int64_t n, float* out);

}  // namespace nvfp4
