#include "nvfp4/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"

namespace nvfp4 {

namespace {
std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}
}  // namespace

void check_scale_bytes(const uint8_t* bytes, int64_t count, const std::string& file,
                       const std::string& tensor) {
  // The bytes refused are exactly those >= 0x7F (0x7F is the positive NaN, 0x80..0xFF have the
  // sign bit set, 0xFF being the negative NaN): one branch-free pass over their maximum (which
  // the compiler vectorizes), and the loop below only to name the first one refused.
  uint8_t top = 0;
  for (int64_t i = 0; i < count; ++i) top = std::max(top, bytes[i]);
  if (top < 0x7F) return;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t b = bytes[i];
    if (e4m3_is_nan(b)) {
      throw Error(file, tensor, "block scale byte is NaN", "a finite E4M3 byte",
                  hex_byte(b) + " at scale index " + std::to_string(i));
    }
    if (b & 0x80) {
      throw Error(file, tensor, "block scale byte has its sign bit set",
                  "a non-negative E4M3 byte", hex_byte(b) + " at scale index " + std::to_string(i));
    }
  }
}

void check_ggml_scale_bytes(const uint8_t* blocks, int64_t n_blocks, const std::string& file,
                            const std::string& tensor) {
  uint8_t top = 0;  // as check_scale_bytes: the maximum first
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int j = 0; j < 4; ++j) top = std::max(top, blocks[b * 36 + j]);
  if (top < 0x7F) return;
  for (int64_t b = 0; b < n_blocks; ++b) check_scale_bytes(blocks + b * 36, 4, file, tensor);
}

void check_tensor_scale(float scale2, const std::string& file, const std::string& tensor) {
  if (!std::isfinite(scale2) || !(scale2 > 0.0f)) {
    throw Error(file, tensor, "tensor scale must be finite and positive", "> 0",
                std::to_string(scale2));
  }
}

void check_input_scale(float input_scale, const std::string& file, const std::string& tensor) {
  if (!(input_scale >= 1e-9f && input_scale <= 1e9f)) {  // NaN, inf, <= 0 included
    throw Error(file, tensor, "activation scale outside what calibration gives (an uncalibrated layer or expert?)",
                "1e-9 .. 1e9 (activation amax 2.7e-6 .. 2.7e12)", [&] {
                  char b[32];
                  std::snprintf(b, sizeof b, "%g", static_cast<double>(input_scale));
                  return std::string(b);
                }());
  }
}

void check_n_in(int64_t n_in, bool block64, const std::string& file, const std::string& tensor) {
  const int64_t k = block64 ? 64 : 16;
  if (n_in <= 0 || n_in % k != 0) {
    throw Error(file, tensor,
                block64 ? "the ggml NVFP4 block layout needs n_in to be a multiple of 64"
                        : "NVFP4 needs n_in to be a multiple of 16",
                "n_in % " + std::to_string(k) + " == 0", "n_in = " + std::to_string(n_in));
  }
}

}  // namespace nvfp4
