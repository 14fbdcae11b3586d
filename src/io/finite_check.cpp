#include "io/finite_check.h"

#include <cmath>
#include <cstring>

#include "nvfp4/codec.h"
#include "nvfp4/error.h"
#include "nvfp4/ggml_types.h"

namespace nvfp4 {
namespace {

std::string where(int64_t i, int64_t row_len) {
  std::string s = "index " + std::to_string(i);
  if (row_len > 0) s += " (row " + std::to_string(i / row_len) + ", column " + std::to_string(i % row_len) + ")";
  return s;
}

[[noreturn]] void bad(const std::string& file, const std::string& tensor, const std::string& what, float v, int64_t i,
                      int64_t row_len) {
  throw Error(file, tensor, what + " is NaN or infinite", "finite values",
              (std::isnan(v) ? std::string("NaN") : v > 0 ? std::string("+Inf") : std::string("-Inf")) + " at " +
                  where(i, row_len));
}

// Exponent all ones: Inf or NaN, in f16 (5 bits) and bf16/f32 (8 bits).
inline bool f16_bad(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }
inline bool bf16_bad(uint16_t h) { return (h & 0x7f80u) == 0x7f80u; }
inline bool f32_bad(uint32_t u) { return (u & 0x7f800000u) == 0x7f800000u; }

}  // namespace

void check_finite_floats(DType dt, const void* data, int64_t n, int64_t row_len, const std::string& file,
                         const std::string& tensor) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (dt == DType::f32) {
    // Blocks of 64 values ORed first: the common case (all finite) is one test per block.
    for (int64_t i = 0; i < n; i += 64) {
      const int64_t m = std::min<int64_t>(64, n - i);
      bool any = false;
      for (int64_t k = 0; k < m; ++k) {
        uint32_t u;
        std::memcpy(&u, p + 4 * (i + k), 4);
        any |= f32_bad(u);
      }
      if (!any) continue;
      for (int64_t k = 0; k < m; ++k) {
        float v;
        std::memcpy(&v, p + 4 * (i + k), 4);
        if (!std::isfinite(v)) bad(file, tensor, "a value", v, i + k, row_len);
      }
    }
    return;
  }
  const bool half = dt == DType::f16;
  for (int64_t i = 0; i < n; i += 64) {
    const int64_t m = std::min<int64_t>(64, n - i);
    bool any = false;
    for (int64_t k = 0; k < m; ++k) {
      uint16_t h;
      std::memcpy(&h, p + 2 * (i + k), 2);
      any |= half ? f16_bad(h) : bf16_bad(h);
    }
    if (!any) continue;
    for (int64_t k = 0; k < m; ++k) {
      uint16_t h;
      std::memcpy(&h, p + 2 * (i + k), 2);
      if (half ? f16_bad(h) : bf16_bad(h)) {
        float v;
        if (half) {
          v = half_to_float(h);
        } else {
          const uint32_t u = static_cast<uint32_t>(h) << 16;
          std::memcpy(&v, &u, 4);
        }
        bad(file, tensor, "a value", v, i + k, row_len);
      }
    }
  }
}

void check_finite_ggml_scales(uint32_t type, const void* data, int64_t n, int64_t row_len, const std::string& file,
                              const std::string& tensor) {
  // Per block: its values, its bytes, the offsets of its f16 scales (d, and m or dmin).
  int64_t values = 0, bytes = 0, off[2] = {-1, -1};
  const char* names[2] = {"scale d", "scale m"};
  switch (type) {
    case ggml::Q4_0: values = 32, bytes = 18, off[0] = 0; break;
    case ggml::Q8_0: values = 32, bytes = 34, off[0] = 0; break;
    case ggml::Q4_1: values = 32, bytes = 20, off[0] = 0, off[1] = 2; break;
    case ggml::Q4_K: values = 256, bytes = 144, off[0] = 0, off[1] = 2, names[1] = "scale dmin"; break;
    case ggml::Q6_K: values = 256, bytes = 210, off[0] = 208; break;
    default: return;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  const int64_t blocks = n / values;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int s = 0; s < 2; ++s) {
      if (off[s] < 0) continue;
      uint16_t h;
      std::memcpy(&h, p + b * bytes + off[s], 2);
      if (f16_bad(h))
        bad(file, tensor, std::string(ggml_type_name(type)) + " block " + names[s], half_to_float(h), b * values,
            row_len);
    }
  }
}

}  // namespace nvfp4
