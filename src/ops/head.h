// The output head and the token embedding in whichever form the checkpoint stores them:
//   F16/F32/BF16: PinnedDense (float, pinned order; embedding rows exact);
//   Q8_0 (convert --head q8): in the integer-exact modes (a16q8, w4a4) the kernel of
//     kernels/head_q8.h (int8 x int8 per 32-block, float in a pinned order: the same bits on every
//     ISA and thread count); in the float modes (a16, f32, f64) the weights dequantized exactly
//     (q * d is exact in float32) through PinnedDense. Embedding rows: dequantized, exact.
//   NVFP4 (convert --head nvfp4): a Linear in the model's mode (w4a4 without an activation scale
//     runs a16q8); embedding rows decoded by the SPEC.md dequantization.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/head_q8.h"
#include "nvfp4/linear.h"
#include "nvfp4/matrix.h"
#include "kernels/pinned_dense.h"

namespace nvfp4 {

class Head {
 public:
  enum class Type { f32, f16, bf16, q8_0, nvfp4 };
  static Head dense(PinnedDense d);
  // blocks: n_out rows of GGUF Q8_0. integer: the model runs an integer-exact mode.
  static Head q8_0(const uint8_t* blocks, int64_t n_out, int64_t n_in, bool integer);
  // forward: the model multiplies by it (the head); rows: it looks rows up (the embedding).
  static Head nvfp4(RowMatrix w, float input_scale, const std::string& name, bool forward, bool rows);

  int64_t n_out() const { return n_out_; }
  int64_t n_in() const { return n_in_; }
  Type type() const { return type_; }
  std::string type_name() const;  // "F32", "F16", "Q8_0", "NVFP4"
  // y[t*n_out + r] = W x_t for t < n.
  void forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool) const;
  void row(int64_t r, float* out) const;
  // The head of rows 0 .. n - 1 only (a draft vocabulary: the MTP proposer's --draft-vocab), a
  // copy in the same storage whose rows give the same bits. n <= n_out, a multiple of 64.
  // Throws nvfp4::Error for an NVFP4 head (its rows are not kept once packed).
  Head prefix(int64_t n) const;
  std::string kernel_name(Mode mode) const;
  size_t bytes() const;

 private:
  Type type_ = Type::f32;
  int64_t n_out_ = 0, n_in_ = 0;
  PinnedDense dense_;      // f32 / f16, and Q8_0 in the float modes
  bool q8_int_ = false;    // Q8_0 held as q8_ (integer-exact modes)
  kern::HeadQ8 q8_;
  bool has_lin_ = false;
  Linear lin_;
  RowMatrix rows_;         // NVFP4 rows for look-ups (empty when not needed)
  static Mode lin_mode(Mode m, const Linear& l);
};

}  // namespace nvfp4
