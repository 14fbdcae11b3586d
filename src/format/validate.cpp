#include "nvfp4/validate.h"

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

void check_tensor_scale(float scale2, const std::string& file, const std::string& tensor) {
  if (!std::isfinite(scale2) || !(scale2 > 0.0f)) {
    throw Error(file, tensor, "tensor scale must be finite and positive", "> 0",
                std::to_string(scale2));
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
