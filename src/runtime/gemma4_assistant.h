// The Gemma 4 assistant's weights and shape (include/nvfp4/gemma4_assistant.h says what it
// computes); read by the proposer (src/runtime/assistant_draft.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/gemma4_assistant.h"
#include "kernels/pinned_dense.h"
#include "ops/head.h"
#include "ops/model_impl.h"

namespace nvfp4 {

struct AssistantLayer {
  MatMul q, o, gate, up, down;
  std::vector<float> q_norm, attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
  float scalar = 1.0f;     // layer_scalar: the residual stream times it after the block
  int64_t source = -1;     // the target layer whose keys and values it reads
  int64_t head_dim = 0, n_kv = 0, n_rot = 0;
  int64_t window = 0;      // sliding: the target's keys within |q - k| <= window (window + 1 of them); 0: all
  RopeConfig rope;
};

struct Gemma4Assistant::Impl {
  std::string dir;
  std::string type;  // gemma4_assistant or gemma4_unified_assistant (the same model)
  const Model* target = nullptr;
  std::unique_ptr<Checkpoint> ck;  // BF16 layers read in place (PinnedDense) live here
  Mode mode = Mode::a16q8;
  int64_t d = 0, n_head = 0, n_ff = 0, n_vocab = 0, backbone = 0;
  float eps = 1e-6f;
  float target_embd_scale = 1.0f;  // the target's embedding scale (sqrt of its hidden size)
  std::vector<AssistantLayer> layers;
  MatMul pre, post;                // [d][2 * backbone], [backbone][d]
  std::vector<float> norm;
  Head head;                       // the tied lm_head [n_vocab][d] (without the masked embedder)
  PinnedDense ordered_head;        // with it: the lm_head's rows in token_ordering's order
  bool ordered = false;            // use_ordered_embeddings: the centroid-masked embedder
  int64_t n_centroids = 0, top_k = 0;
  MatMul centroids;                // [n_centroids][d]
  std::vector<int32_t> order;      // token_ordering: centroid c's tokens at [c * per, (c + 1) * per)
  size_t bytes = 0;
  bool quantized = false;
};

}  // namespace nvfp4
