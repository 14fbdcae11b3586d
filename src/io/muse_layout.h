// llama.cpp's GGUF layout of Muse Glimmer (arch muse-glimmer) <-> ours. llama.cpp's converter
// (conversion/muse_glimmer.py) writes the HF text model with:
//   - q_proj / k_proj rows in its interleaved RoPE order (_unpermute_for_rope; ours: HF's rotate-half
//     order, NeoX pairs);
//   - the four zero-centred norms of a block with their 1 added (the final norm as it is);
//   - q and k norms as tensors: blk.N.attn_q_norm.weight all qk_scale_factor, attn_k_norm all 1
//     (ours: the weightless norms and attention.qk_scale);
//   - the post-attention / post-FFN norms' eps not stored (its graph has 1e-8; ours:
//     attention.post_norm_epsilon).
// The keys it shares with ours: sliding_window, sliding_window_pattern, logit_scale (output_multiplier),
// final_logit_softcapping, rope.freq_base.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// A GGUF checkpoint of llama.cpp's muse-glimmer seen with HF's q/k rows; any other checkpoint
// returned as it is.
std::unique_ptr<Checkpoint> muse_from_llamacpp(std::unique_ptr<Checkpoint> ck);
// Our Muse Glimmer checkpoint (an HF directory, or the view above) seen in llama.cpp's layout, or
// null when it is not one. `ck` must outlive the view.
std::unique_ptr<Checkpoint> muse_to_llamacpp(const Checkpoint& ck);
// The q and k norms llama.cpp's layout holds, made from attention.qk_scale for a checkpoint that
// has none (an HF directory): blk.N.attn_q_norm.weight and attn_k_norm.weight of every layer.
// Empty when `ck` is not Muse Glimmer or has them.
std::vector<std::pair<std::string, std::vector<float>>> muse_qk_norms(const Checkpoint& ck);

}  // namespace nvfp4
