// The scaled FP8 forms (DType::mxfp8, DType::fp8_b128; nvfp4/dense.h) in scalar code: fp8s_at is
// the truth for one weight, gemv_fp8s_scalar the reference product (float32 sums in input order).
//
// Widening, the part every ISA computes with the same bits:
//   mxfp8:    e4m3(code) * 2^(e - 127): a power of two times a 4-bit significand with exponent
//             >= -9, so the product (down to 2^-136, a float32 subnormal) is exact as long as it
//             stays finite; the loader refuses E8M0 bytes above kE8m0MaxForE4m3 (and 0xFF, NaN).
//   fp8_b128: e4m3(code) * s in float32, one product rounded once to nearest even.
// The vector kernels widen the E4M3 byte exactly (through F16 bits) and then take the same one
// product, so they meet the same bits. The sums that follow are float32 FMA in each kernel's order:
// within the derived bound of FP64, like the dense kernels, not pinned across ISAs.
#include <cstring>

#include "kernels/packed.h"
#include "nvfp4/codec.h"

namespace nvfp4::kern {

float fp8s_at(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, int64_t r, int64_t i) {
  const float v = e4m3_to_float(w[r * n_in + i]);
  const uint8_t* sc = w + n_out * n_in;
  if (dtype == DType::mxfp8) return v * e8m0_to_float(sc[r * (n_in / kMxBlock) + i / kMxBlock]);
  const int64_t nbc = (n_in + kFp8Block - 1) / kFp8Block;
  float s;
  std::memcpy(&s, sc + 4 * ((r / kFp8Block) * nbc + i / kFp8Block), 4);
  return v * s;
}

void gemv_fp8s_scalar(DType dtype, const uint8_t* w, int64_t n_out, int64_t n_in, const float* x, int64_t n, int64_t rb,
                      int64_t re, float* y) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = rb; r < re; ++r) {
      float acc = 0.0f;
      for (int64_t i = 0; i < n_in; ++i) acc += fp8s_at(dtype, w, n_out, n_in, r, i) * x[t * n_in + i];
      y[t * n_out + r] = acc;
    }
  }
}

}  // namespace nvfp4::kern
