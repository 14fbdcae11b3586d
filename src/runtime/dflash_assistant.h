// The DFlash assistant's weights and shape (include/nvfp4/dflash_draft.h says what it computes);
// read by the proposer (src/runtime/dflash_draft.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nvfp4/checkpoint.h"
#include "nvfp4/dflash_draft.h"
#include "ops/model_impl.h"

namespace nvfp4 {

struct DflashLayer {
  MatMul q, k, v, o, gate, up, down;
  std::vector<float> q_norm, k_norm, attn_norm, ffn_norm;  // [head_dim], [head_dim], [d], [d]
  int64_t window = 0;                                      // sliding (DflashDrafter::Impl::inclusive says the bound); 0: full
  bool causal = false;  // block queries see the block's keys up to their own only (z-lab's sliding layers)
};

struct DflashDrafter::Impl {
  std::string dir;
  const Model* target = nullptr;
  std::unique_ptr<Checkpoint> ck;  // the BF16 layers read in place (PinnedDense) live here
  Mode mode = Mode::a16q8;
  int64_t d = 0, n_head = 0, n_kv = 0, head_dim = 0, n_ff = 0, block = 0, n_vocab = 0;
  int32_t mask_token = 0;
  float eps = 1e-6f;
  RopeConfig rope;
  std::vector<int> taps;   // the target's hidden_states indices (z-lab's target_layer_ids + 1)
  std::string format;      // "muse_glimmer_assistant" (transformers) or "DFlashDraftModel" (z-lab's dflash)
  bool inclusive = true;   // sliding layers see |q - k| <= window (transformers' bidirectional overlay); else < window
  float embed_scale = 1.0f;  // z-lab's input_embedding_scale: the block's raw embeddings times it
  float out_mult = 1.0f, softcap = 0.0f;  // z-lab's output_multiplier and final_logit_softcapping on the draft logits
  MatMul fc;  // [d][taps * d]
  std::vector<float> enc_norm, norm;
  std::vector<DflashLayer> layers;
  size_t bytes = 0;
  bool quantized = false;  // its float layers quantized to NVFP4 at load
};

}  // namespace nvfp4
