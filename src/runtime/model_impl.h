// Model internals shared by loading (model_load.cpp) and evaluation (context.cpp).
#pragma once
#include <string>
#include <vector>

#include "nvfp4/dense.h"
#include "nvfp4/linear.h"
#include "nvfp4/model.h"
#include "runtime/pinned_dense.h"

namespace nvfp4 {

// One linear layer: NVFP4 (Linear, in the model's mode) or float (DenseLinear f32).
struct MatMul {
  std::string name;  // "blk.0.attn_q"
  bool nvfp4 = false;
  Linear lin;
  DenseLinear dense;
  PinnedDense pinned;  // instead of dense with LoadOptions::pinned_float
  bool use_pinned = false;
  int64_t n_out = 0, n_in = 0;
  size_t bytes = 0;  // weight bytes as stored for the kernels
  std::vector<float> bias;  // [n_out], empty: none (added to the output in float)
  // NVFP4_AWQ's per-input-channel pre_quant_scale [n_in], empty: none. StepRun::run/run_group
  // multiply the input by it (x[i] * s[i], one float product) before the layer reads it.
  std::vector<float> pre_scale;
  void forward(Mode mode, const float* x, int64_t n, float* y, ThreadPool& pool, LinearScratch* scratch) const {
    if (nvfp4) lin.forward(mode, x, n, y, pool, scratch);
    else if (use_pinned) pinned.forward(x, n, y, pool);
    else dense.forward(x, n, y, pool);
  }
  std::string kernel(Mode mode, int64_t n) const {
    return nvfp4 ? lin.kernel_name(mode, n) : use_pinned ? pinned.kernel_name() : dense.kernel_name(n);
  }
};

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  std::vector<float> q_norm, k_norm;  // [head_dim] each (Qwen3), empty: none
  MatMul q, k, v, o, gate, up, down;
};

struct Model::Impl {
  ModelConfig cfg;
  Mode mode = Mode::a16q8;
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;
  PinnedDense embd;
  PinnedDense head_own;  // used when the head is not tied
  const PinnedDense& head() const { return cfg.tied_head ? embd : head_own; }
  std::string source;
};

}  // namespace nvfp4
