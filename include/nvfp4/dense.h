// A float linear layer (heads, embeddings and layers kept in float): weights stored as F32, F16,
// BF16 or FP8 E4M3 (1 byte a weight: read as stored, widened exactly in registers), y = W x in float32 over a window of n columns (x[t*n_in + i], y[t*n_out + r]).
// Not bit-pinned across ISAs; checked against FP64 with a derived bound.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nvfp4/thread_pool.h"

namespace nvfp4 {

// e4m3: FP8 E4M3 values without their scale (a checkpoint's FP8 layer: the scale, per tensor or per
// output row, multiplies the output; MatMul::out_scale). NaN bytes are refused at load.
// The scaled FP8 forms (prepare_scaled; the kernel table's fp8s entry), whose scale varies along
// the input and so is applied to each weight as it is widened, w = e4m3(byte) * scale:
//   mxfp8:    one E8M0 byte (2^(e - 127)) per 32 inputs of a row, scales u8 [n_out][n_in / 32]
//             (n_in % 32 == 0); a power of two, so every widened weight is exact;
//   fp8_b128: one float32 per 128 x 128 block (smaller at the right and bottom edges), scales
//             f32 [ceil(n_out / 128)][ceil(n_in / 128)]; one float32 product, rounded once.
// Either way the widened weight has the same bits on every ISA (kernels/gemv_fp8s.cpp).
enum class DType { f32, f16, bf16, e4m3, mxfp8, fp8_b128 };
inline constexpr int64_t kMxBlock = 32;    // MXFP8: inputs per E8M0 scale
inline constexpr int64_t kFp8Block = 128;  // FP8 block scales: 128 x 128
inline bool dtype_scaled(DType d) { return d == DType::mxfp8 || d == DType::fp8_b128; }
// Bytes of a scaled form's scales (0 for the others).
int64_t scale_bytes(DType d, int64_t n_out, int64_t n_in);

class DenseLinear {
 public:
  DenseLinear();
  ~DenseLinear();
  DenseLinear(DenseLinear&&) noexcept;
  DenseLinear& operator=(DenseLinear&&) noexcept;

  // Copies W[n_out][n_in] stored as `dtype` (row-major) into the kernels' layout.
  static DenseLinear prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in);
  // A scaled FP8 form (mxfp8, fp8_b128): E4M3 codes [n_out][n_in] and scales as laid out above
  // (scale_bytes(dtype, n_out, n_in) bytes), copied as they are.
  static DenseLinear prepare_scaled(DType dtype, const uint8_t* codes, const void* scales, int64_t n_out, int64_t n_in);
  int64_t n_out() const;
  int64_t n_in() const;
  DType dtype() const;
  void forward(const float* x, int64_t n, float* y, ThreadPool& pool) const;
  std::string kernel_name(int64_t n) const;
  // Row r of W as float32 (embedding lookups).
  void row(int64_t r, float* out) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nvfp4
