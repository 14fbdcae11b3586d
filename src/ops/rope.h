// RoPE: a table of cos/sin(pos * freq_i) per position and frequency, built from the pinned double
// functions and rounded to float (docs/DETERMINISM.md), applied in the layout the architecture
// uses. freq_i = theta^(-2i/d), divided by the llama3 factor of i and by the linear factor when the
// model has them. The table grows on demand; a position's entries never change.
#pragma once
#include <cstdint>
#include <vector>

#include "nvfp4/model.h"

namespace nvfp4 {

class RopeTable {
 public:
  // n_rot: the dimensions rotated at the start of each head (partial RoPE: Qwen3.5's 64 of 256,
  // frequencies theta^(-2i/n_rot), the rest passed through); 0 or head_dim: all of them.
  // cfg.proportional (Gemma 4): the pairs (i, i + head_dim/2) of the whole head, the first n_rot/2
  // of them at theta^(-2i/head_dim), the others not rotated.
  void init(const RopeConfig& cfg, int64_t head_dim, int64_t n_rot = 0);
  // Covers positions [0, n_pos) (grows by doubling, recomputing: the same values).
  void reserve(int64_t n_pos);
  // Rotates each of n_heads heads of x (head h at x + h * head_dim) at position pos: adjacent
  // pairs (x[2i], x[2i+1]) or NeoX halves (x[i], x[i + d/2]);
  // x0' = x0*c - x1*s, x1' = x0*s + x1*c in float.
  void apply(float* x, int64_t n_heads, int64_t pos) const;
  size_t bytes() const { return (cos_.size() + sin_.size()) * 4; }

 private:
  RopeConfig cfg_;
  int64_t head_dim_ = 0, rot_ = 0, half_ = 0, n_pos_ = 0;
  int64_t other_ = 0;  // NeoX: the partner's distance (half_, or head_dim / 2 when proportional)
  std::vector<double> freq_;
  std::vector<float> cos_, sin_;  // [n_pos][half]
};

}  // namespace nvfp4
