// A float layer (F32 or F16 weights) with a pinned summation order, for the output head and
// embeddings: the same bits on every ISA, thread count and batch size (DenseLinear is faster in
// places but its order follows the vector width).
//
// Order, per output row and column: 16 partial sums, lane l = sum over i = l, l+16, l+32, ... in
// ascending i of (w[i] * x[i]) (float multiply, then float add; acc starts at +0); then the lanes
// are added pairwise as a tree: l + (l+8) for l < 8, then l + (l+4), l + (l+2), l + (l+1).
// AVX-512 holds the 16 lanes in one register, AVX2 in two, the scalar code in an array.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

class PinnedDense {
 public:
  // Stores W[n_out][n_in] as F16 when `dtype` is f16, else as F32 (BF16 widens exactly).
  static PinnedDense prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in);
  static PinnedDense from_f32(std::vector<float> w, int64_t n_out, int64_t n_in);
  int64_t n_out() const { return n_out_; }
  int64_t n_in() const { return n_in_; }
  bool is_f16() const { return f16_; }
  // y[t*n_out + r] = W x_t for t < n.
  void forward(const float* x, int64_t n, float* y, ThreadPool& pool) const;
  // Row r as float32 (embedding look-up).
  void row(int64_t r, float* out) const;
  std::string kernel_name() const;
  size_t bytes() const { return f16_ ? h_.size() * 2 : f_.size() * 4; }

 private:
  int64_t n_out_ = 0, n_in_ = 0;
  bool f16_ = false;
  HugeVector<float> f_;
  HugeVector<uint16_t> h_;
};

namespace pinned_dense_detail {
// Software prefetch of the next block of R rows (esz bytes per weight) while a block's inputs
// [i, i + 16) are processed: the matching slice of the next block's bytes, so that a decode step,
// which reads the head once from beyond the caches, finds it on its way.
struct NextBlock {
  const char* p = nullptr;
  int64_t bytes = 0, per_step = 0;
  NextBlock(const void* w, int64_t n_in, int64_t n_out, int64_t r, int64_t rows, int64_t esz) {
    const int64_t next_rows = std::max<int64_t>(0, std::min<int64_t>(rows, n_out - r - rows));
    bytes = next_rows * n_in * esz;
    per_step = rows * 16 * esz;
    if (next_rows > 0) p = static_cast<const char*>(w) + (r + rows) * n_in * esz;
  }
  void at(int64_t i) const {
    if (!p) return;
    const int64_t off = (i / 16 * per_step) & ~int64_t{63};
    for (int64_t o = off; o < std::min(bytes, off + per_step); o += 64) __builtin_prefetch(p + o, 0, 3);
  }
};

// One row range [r0, r1) for all n columns; every variant follows the order above exactly.
using RowsFn = void (*)(const void* w, bool f16, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n, float* y, int64_t r0, int64_t r1);
void rows_scalar(const void*, bool, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
void rows_avx2(const void*, bool, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
void rows_avx512(const void*, bool, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
}  // namespace pinned_dense_detail

}  // namespace nvfp4
