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
enum class DType { f32, f16, bf16, e4m3 };

class DenseLinear {
 public:
  DenseLinear();
  ~DenseLinear();
  DenseLinear(DenseLinear&&) noexcept;
  DenseLinear& operator=(DenseLinear&&) noexcept;

  // Copies W[n_out][n_in] stored as `dtype` (row-major) into the kernels' layout.
  static DenseLinear prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in);
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
