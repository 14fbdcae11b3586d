// Q8_0 quantization and dequantization (include/nvfp4/q8_0.h has the rule).
#include "nvfp4/q8_0.h"

#include <cmath>
#include <cstring>

#include "nvfp4/codec.h"

namespace nvfp4 {

void quantize_row_q8_0(const float* x, int64_t n, uint8_t* dst) {
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    const float* v = x + b * kQ8_0Block;
    float amax = 0.0f;
    for (int j = 0; j < kQ8_0Block; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 blk;
    blk.d = float_to_half(d);
    for (int j = 0; j < kQ8_0Block; ++j) blk.qs[j] = static_cast<int8_t>(std::round(v[j] * id));  // half away from 0
    std::memcpy(dst + b * sizeof(BlockQ8_0), &blk, sizeof blk);
  }
}

void dequantize_row_q8_0(const uint8_t* src, int64_t n, float* out) {
  for (int64_t b = 0; b < n / kQ8_0Block; ++b) {
    BlockQ8_0 blk;
    std::memcpy(&blk, src + b * sizeof(BlockQ8_0), sizeof blk);
    const float d = half_to_float(blk.d);
    for (int j = 0; j < kQ8_0Block; ++j) out[b * kQ8_0Block + j] = static_cast<float>(blk.qs[j]) * d;
  }
}

}  // namespace nvfp4
