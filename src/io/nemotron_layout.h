// llama.cpp's GGUF layout of Nemotron-H / Nemotron 3 (archs nemotron_h and nemotron_h_moe) and
// ours, both ways. llama.cpp's convert_hf_to_gguf.py (conversion/nemotron.py: NemotronHModel over
// GraniteHybridModel and Mamba2Model) writes:
//   - arch nemotron_h_moe when the config has experts, else nemotron_h;
//   - no layer pattern: a layer's kind is in per-layer arrays, attention.head_count_kv (> 0: an
//     attention layer) and feed_forward_length (> 0: an MLP layer, or in nemotron_h_moe an MoE
//     layer, the experts' width); both 0: a Mamba-2 layer (so an MLP beside MoE layers in one
//     model, which transformers allows, has no llama.cpp form: refused by name);
//   - attention.layer_norm_epsilon (llama.cpp reads attention.layer_norm_rms_epsilon first, then
//     this one), expert_shared_count;
//   - A_log as blk.N.ssm_a = -exp(A_log) [n_head, 1], D as blk.N.ssm_d [n_head, 1], the gated
//     norm blk.N.ssm_norm.weight as [n_group, inner / n_group], conv1d squeezed to [channels,
//     kernel], all F32;
//   - the router's e_score_correction_bias as blk.N.exp_probs_b.bias, LatentMoE's fc1 / fc2
//     projections as blk.N.ffn_latent_down / ffn_latent_up;
//   - a release's MTP block appended after the model's blocks (nextn_predict_layers).
// Ours (what src/models/nemotron_h.cpp loads): nemotron_h with layer_pattern (M, *, -, E), scalar
// head_count_kv and feed_forward_length, ssm_a_log (the HF values), ssm_d and ssm_norm as vectors,
// ffn_gate_inp.e_score_correction_bias, ffn_latent_in / ffn_latent_out. The writer also stores the
// exact A_log values (<arch>.ssm.a_log_exact, ignored by llama.cpp), as io/hybrid_layout.h does.
// GGUFs of our earlier layout (nemotron_h with layer_pattern) are read as they are.
#pragma once
#include <memory>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// A GGUF checkpoint of llama.cpp's nemotron_h / nemotron_h_moe seen in our layout; any other
// checkpoint returned as it is. mtp: appended MTP blocks kept under their names, not set aside.
std::unique_ptr<Checkpoint> nemotron_from_llamacpp(std::unique_ptr<Checkpoint> ck, bool mtp = false);
// A nemotron_h checkpoint in our layout seen in llama.cpp's, for the GGUF writer; nullptr when `ck`
// is not one. `ck` must outlive it.
std::unique_ptr<Checkpoint> nemotron_to_llamacpp(const Checkpoint& ck);

}  // namespace nvfp4
