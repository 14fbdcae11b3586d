// A float layer (F32 or F16 weights) with a pinned summation order, for the output head and
// embeddings: the same bits on every ISA, thread count and batch size (DenseLinear is faster in
// places but its order follows the vector width).
//
// Order, per output row and column: 16 partial sums, lane l = sum over i = l, l+16, l+32, ... in
// ascending i of (w[i] * x[i]) (float multiply, then float add; acc starts at +0); then the lanes
// are added pairwise as a tree: l + (l+8) for l < 8, then l + (l+4), l + (l+2), l + (l+1).
// AVX-512 holds the 16 lanes in one register, AVX2 in two, the scalar code in an array.
//
// Layout in memory (not the order of the sums): rows in tiles of 8, each tile one contiguous
// stream of chunks of 16 inputs, a chunk holding the tile's 8 rows' 16 values one row after the
// other (tiled_at below); rows past n_out and inputs past n_in are stored as zeros. So a block of
// 8 rows reads one stream instead of 8 (the F16 head of a Gemma 4 shape, 49152 x 2816, one
// thread from DRAM on a Zen 4: 25-27 GB/s against 13-17 for 8 row-major rows, BENCHMARKS 43).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

namespace pinned_dense_detail {
// The stored element: the kernels' `elem` argument.
enum Elem : int { kF32 = 0, kF16 = 1, kBF16 = 2 };
// The tiled layout: tiles of kTile rows, chunks of 16 inputs (n_in padded to padded_in).
inline constexpr int64_t kTile = 8;
inline int64_t padded_in(int64_t n_in) { return (n_in + 15) & ~int64_t{15}; }
inline int64_t padded_out(int64_t n_out) { return (n_out + kTile - 1) / kTile * kTile; }
// The element index of W[r][i] (i a multiple of 16 gives the start of that row's 16 values).
inline int64_t tiled_at(int64_t r, int64_t i, int64_t n_in) {
  return (r / kTile) * kTile * padded_in(n_in) + (i / 16) * (16 * kTile) + (r % kTile) * 16 + (i % 16);
}
}  // namespace pinned_dense_detail

class PinnedDense {
 public:
  // Stores W[n_out][n_in] (row-major as given) in the tiled layout: F16, BF16 (each widened
  // exactly in registers as it is read) or F32.
  static PinnedDense prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in);
  static PinnedDense from_f32(std::vector<float> w, int64_t n_out, int64_t n_in);
  // A copy of rows 0 .. n - 1 (n <= n_out), in the same storage.
  PinnedDense prefix(int64_t n) const;
  int64_t n_out() const { return n_out_; }
  int64_t n_in() const { return n_in_; }
  bool is_f16() const { return elem_ == pinned_dense_detail::kF16; }
  bool is_bf16() const { return elem_ == pinned_dense_detail::kBF16; }
  // y[t*n_out + r] = W x_t for t < n.
  void forward(const float* x, int64_t n, float* y, ThreadPool& pool) const;
  // Row r as float32 (embedding look-up).
  void row(int64_t r, float* out) const;
  std::string kernel_name() const;
  size_t bytes() const { return h_.size() * 2 + f_.size() * 4; }

 private:
  int64_t n_out_ = 0, n_in_ = 0;
  int elem_ = pinned_dense_detail::kF32;
  HugeVector<float> f_;      // F32
  HugeVector<uint16_t> h_;   // F16 or BF16
};

namespace pinned_dense_detail {
// Software prefetch of the tiled stream: at input i of the tile starting at `tile`, the 64-byte
// lines of the chunk kAhead bytes further on (past the tile's end: the next tile's, which follows
// it in memory). Called once per chunk (16 inputs) by the pass that reads a tile first.
template <int64_t kEsz>
struct TileAhead {
  static constexpr int64_t kAhead = 2048;
  static constexpr int64_t kChunk = 16 * kTile * kEsz;  // bytes per chunk: 256 (F16), 512 (F32)
  const char* p;
  explicit TileAhead(const void* tile) : p(static_cast<const char*>(tile) + kAhead) {}
  // Always inlined: GCC 12 finds an out-of-line at() "pure" (it sees no side effect in a
  // prefetch) and deletes the calls, prefetches and all.
  [[gnu::always_inline]] void at(int64_t i) const {
    const char* q = p + (i / 16) * kChunk;
    for (int64_t l = 0; l < kChunk; l += 64) __builtin_prefetch(q + l, 0, 3);
  }
};

// One row range [r0, r1) for all n columns; every variant follows the order above exactly.
using RowsFn = void (*)(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n, float* y, int64_t r0, int64_t r1);
void rows_scalar(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
void rows_avx2(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
void rows_avx512(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
}  // namespace pinned_dense_detail

}  // namespace nvfp4
