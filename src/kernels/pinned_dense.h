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
#include <type_traits>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/huge_pages.h"
#include "nvfp4/thread_pool.h"

namespace nvfp4 {

namespace pinned_dense_detail {
// The stored element: the kernels' `elem` argument.
enum Elem : int { kF32 = 0, kF16 = 1, kBF16 = 2 };
}  // namespace pinned_dense_detail

class PinnedDense {
 public:
  // Stores W[n_out][n_in] as given: F16, BF16 (each widened exactly in registers as it is read)
  // or F32.
  static PinnedDense prepare(DType dtype, const void* w, int64_t n_out, int64_t n_in);
  static PinnedDense from_f32(std::vector<float> w, int64_t n_out, int64_t n_in);
  // A copy of rows 0 .. n - 1 (n <= n_out), in the same storage.
  PinnedDense prefix(int64_t n) const;
  // A copy whose row i is row rows[i] of this one (each < n_out), in the same storage.
  PinnedDense gather(const std::vector<int32_t>& rows) const;
  int64_t n_out() const { return n_out_; }
  int64_t n_in() const { return n_in_; }
  bool is_f16() const { return elem_ == pinned_dense_detail::kF16; }
  bool is_bf16() const { return elem_ == pinned_dense_detail::kBF16; }
  // y[t*n_out + r] = W x_t for t < n.
  void forward(const float* x, int64_t n, float* y, ThreadPool& pool) const;
  // y[r] = W x for rows r0 <= r < r1 of one column, on the calling thread (the same bits as forward()).
  void forward_rows(const float* x, int64_t r0, int64_t r1, float* y) const;
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
// Software prefetch for a block of R rows read side by side (esz bytes per weight), at the
// distances of the prefetch plan Pf (kernels/packed.h: Pf::kRowNear into L1 and, where the plan
// has one, Pf::kRowFar into L2): at input i, each row's line that far on; past a row's end, the
// same line of the row R further on (the next block's), so the stream runs on from block to block
// without a cold start. Called once per 16 inputs; it asks only where a 64-byte line starts (every
// step for F32, every other for F16). Measured on the head's shape (49152 x 2048 F16, one core,
// weights in DRAM, BENCHMARKS 15, the SPR-class guest): 16.3-16.4 GB/s at 512-2048 bytes into L1,
// against 11.3 for the whole next block prefetched ahead (32 KiB: the rows this one reads were by
// then evicted or late) and 13.4 for none. On the Zen 4 guest one L1 distance left one core at
// 17.6 GB/s (49152 x 2816 F16, Gemma 4's head); 512 bytes into L1 and 2 KiB into L2 read 27.5
// (BENCHMARKS 46): L2's requests do not hold L1's few miss buffers.
template <int R, int64_t kEsz, class Pf>
struct RowAhead {
  const char* p = nullptr;
  int64_t row_bytes = 0;
  int next_rows = 0;
  RowAhead(const void* w, int64_t n_in, int64_t n_out, int64_t r)
      : p(static_cast<const char*>(w) + r * n_in * kEsz), row_bytes(n_in * kEsz),
        next_rows(static_cast<int>(std::clamp<int64_t>(n_out - r - R, 0, R))) {}
  // Always inlined: GCC 12 finds an out-of-line at() "pure" (it sees no side effect in a
  // prefetch) and deletes the calls, prefetches and all.
  [[gnu::always_inline]] void at(int64_t i) const {
    if ((i * kEsz) % 64 != 0) return;
    if constexpr (Pf::kRowFar > 0) lines(i * kEsz + Pf::kRowFar, std::integral_constant<int, 2>());
    lines(i * kEsz + Pf::kRowNear, std::integral_constant<int, 3>());
  }
  // The line at byte off of each row (past the row's end: of the next block's rows), at locality L.
  template <int L>
  [[gnu::always_inline]] void lines(int64_t off, std::integral_constant<int, L>) const {
    const bool here = off < row_bytes;
    const char* q = here ? p + off : p + R * row_bytes + (off - row_bytes);
    const int n = here ? R : next_rows;
    for (int k = 0; k < n; ++k, q += row_bytes) __builtin_prefetch(q, 0, L);
  }
};

// One row range [r0, r1) for all n columns; every variant follows the order above exactly.
using RowsFn = void (*)(const void* w, int elem, int64_t n_in, int64_t n_out, const float* x,
                        int64_t n, float* y, int64_t r0, int64_t r1);
void rows_scalar(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template <class Pf>
void rows_avx2(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
template <class Pf>
void rows_avx512(const void*, int, int64_t, int64_t, const float*, int64_t, float*, int64_t, int64_t);
}  // namespace pinned_dense_detail

}  // namespace nvfp4
