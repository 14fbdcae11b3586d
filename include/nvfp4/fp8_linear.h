// An FP8 E4M3 linear layer (a checkpoint's per-tensor or per-channel FP8 layer, its scale applied
// by the caller; or MXFP8, its E8M0 scales inside) in the integer-exact modes (a16q8, w4a4): the input quantized as a16q8 quantizes
// it (or MXFP8 and 128 x 128 blocks, their scales inside), each block's dot product an exact integer, then a pinned float order
// (src/kernels/fp8_q8.h), so a mixed checkpoint gives the same bits on every ISA, thread count
// and batch. One byte a weight, as stored.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nvfp4/thread_pool.h"

namespace nvfp4 {

class Fp8Linear {
 public:
  Fp8Linear();
  ~Fp8Linear();
  Fp8Linear(Fp8Linear&&) noexcept;
  Fp8Linear& operator=(Fp8Linear&&) noexcept;

  // Whether a layer of n_in inputs can take this form (whole 16-value activation groups).
  static bool fits(int64_t n_in) { return n_in > 0 && n_in % 16 == 0; }
  // From row-major E4M3 bytes [n_out][n_in] (NaN bytes refused by the caller); fits(n_in).
  static Fp8Linear prepare(const uint8_t* codes, int64_t n_out, int64_t n_in);
  // MXFP8: codes and one E8M0 byte per 32 inputs of a row, [n_out][n_in / 32] (bytes <= 246, as the
  // loader takes them); n_in % 32 == 0.
  static Fp8Linear prepare_mx(const uint8_t* codes, const uint8_t* scales, int64_t n_out, int64_t n_in);
  // FP8 with 128 x 128 block scales: codes and one F32 scale per block, [ceil(n_out / 128)]
  // [ceil(n_in / 128)] (finite, as the loader takes them); n_in % 32 == 0.
  static Fp8Linear prepare_b128(const uint8_t* codes, const float* scales, int64_t n_out, int64_t n_in);
  explicit operator bool() const { return impl_ != nullptr; }
  int64_t n_out() const;
  int64_t n_in() const;
  // y[t * n_out + r] = sum over the input of W x_t, for t < n (without the layer's scale).
  void forward(const float* x, int64_t n, float* y, ThreadPool& pool) const;
  std::string kernel_name() const;
  // The stored form: "e4m3" (per-tensor or per-channel), "mxfp8" or "b128" (128 x 128 blocks).
  const char* form() const;
  size_t bytes() const;

  struct Impl;

 private:
  explicit Fp8Linear(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4
