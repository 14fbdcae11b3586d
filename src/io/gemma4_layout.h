// llama.cpp's GGUF layout of Gemma 4 (arch gemma4) read as ours. llama.cpp's convert_hf_to_gguf.py
// (conversion/gemma.py: Gemma4Model over Gemma3Model) writes:
//   - attention.sliding_window (ours: attention.sliding_window_swa, the window of the sliding
//     layers only), key_length / value_length of the global layers and key_length_swa /
//     value_length_swa of the sliding ones (ours: key_length for the sliding layers,
//     key_length_global), head_count_kv per layer (ours: head_count_kv for the sliding layers,
//     head_count_kv_global), feed_forward_length per layer where the KV-shared layers' MLP is
//     twice as wide (ours: feed_forward_length and feed_forward_double_wide);
//   - rope.dimension_count (the global head) with a rope_freqs.weight tensor whose factor is 1 on
//     the rotated pairs and 1e30 on the others (ours: rope.dimension_count_global, the rotated
//     dimensions of "proportional" RoPE), rope.dimension_count_swa;
//   - a K = V global layer (attention_k_eq_v) as one without attn_v (ours: attention.k_eq_v);
//   - the experts' gate and up stacked in one tensor, blk.N.ffn_gate_up_exps (gate rows first),
//     the router's per-dimension scale as blk.N.ffn_gate_inp.scale and its per-expert scale as
//     blk.N.ffn_down_exps.scale (ours: ffn_gate_exps.E / ffn_up_exps.E, ffn_gate_inp_scale.weight,
//     ffn_gate_exps_scale.weight).
// The rest (the four norms, layer_output_scale, per-layer embeddings, shared_kv_layers,
// final_logit_softcapping) has the same names. NVFP4 experts, as llama.cpp's converter writes and
// its loader reads them: gate and up apart (ffn_gate_exps / ffn_up_exps, each with its .scale),
// and the router's per-expert scale folded into the down experts' tensor scale
// (ffn_down_exps.scale). Our `convert` writes this layout (gemma4_to_llamacpp, gemma4_rope_freqs).
#pragma once
#include <memory>
#include <vector>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// A GGUF checkpoint of llama.cpp's gemma4 seen in our layout; any other checkpoint returned as it is.
std::unique_ptr<Checkpoint> gemma4_from_llamacpp(std::unique_ptr<Checkpoint> ck);
// Our gemma4 checkpoint (from an HF directory, or the view above) seen in llama.cpp's layout, or
// null when it is not a gemma4 one. `ck` must outlive the view. stack_experts: the experts' gate
// and up as one ffn_gate_up_exps tensor (llama.cpp's converter does so for float experts); else
// apart (ffn_gate_exps / ffn_up_exps: llama.cpp reads no tensor scale for a stacked one, so NVFP4
// experts must stay apart).
std::unique_ptr<Checkpoint> gemma4_to_llamacpp(const Checkpoint& ck, bool stack_experts = true);
// llama.cpp's rope_freqs.weight for our gemma4 checkpoint `ck` (1 on the global layers' rotated
// pairs, 1e30 on the others); empty when `ck` is not gemma4.
std::vector<float> gemma4_rope_freqs(const Checkpoint& ck);

}  // namespace nvfp4
