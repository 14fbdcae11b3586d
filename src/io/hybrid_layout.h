// llama.cpp's GGUF layout of the Gated DeltaNet hybrids (archs qwen35, qwen35moe, qwen3next) and
// ours, both ways. llama.cpp's convert_hf_to_gguf.py (conversion/qwen.py: Qwen3NextModel,
// _LinearAttentionVReorderBase, Qwen3_5TextModel, Qwen3_5MoeTextModel) writes:
//   - post_attention_layernorm as blk.N.post_attention_norm (ours: blk.N.ffn_norm);
//   - A_log as blk.N.ssm_a = -exp(A_log) (ours: blk.N.ssm_a_log, the HF values); dt_bias as
//     blk.N.ssm_dt.bias;
//   - conv1d squeezed to [channels, kernel], F32;
//   - every RMSNorm weight but linear_attn.norm with the 1 of the zero-centred (1 + w) added;
//   - qwen35 / qwen35moe only, when there are fewer key heads than value heads: the value heads
//     reordered from grouped by key head (HF: [g0v0 .. g0v{r-1}, g1v0 ..]) to tiled
//     ([g0v0, g1v0, .., g0v1, g1v1, ..]) in in_proj_qkv's v rows, in_proj_z's rows, in_proj_b's
//     and in_proj_a's rows, A_log, dt_bias, conv1d's v channels and out_proj's columns;
//   - qwen3next: in_proj_qkvz (rows grouped per key head: q, k, v, z) split into attn_qkv (all q,
//     all k, all v) and attn_gate (all z); in_proj_ba kept as ssm_ba (per key head: b, a);
//   - qwen35 / qwen35moe: rope.dimension_sections (its IMROPE, the same rotation as NeoX for text
//     positions), [11, 11, 10, 0] when the config has no mrope_section.
// The reader presents such a file under our names and layout (what src/models/qwen3_5.cpp loads:
// HF's grouped order, A_log, ssm_beta / ssm_alpha); the writer presents a checkpoint of ours in
// llama.cpp's. Our writer also stores the exact A_log values (key <arch>.ssm.a_log_exact, which
// llama.cpp ignores), so that our own GGUF runs to the same bits as the HF directory it came from.
#pragma once
#include <memory>

#include "nvfp4/checkpoint.h"

namespace nvfp4 {

// True for llama.cpp's hybrid archs (qwen35, qwen35moe, qwen3next).
bool is_hybrid_gguf_arch(const std::string& gguf_arch);
// A GGUF checkpoint of a hybrid arch seen in our layout; any other checkpoint returned as it is.
// mtp: the file's MTP blocks (blk.<block_count - nextn_predict_layers>.*) kept under their names
// (Checkpoint::OpenOptions), not set aside.
std::unique_ptr<Checkpoint> hybrid_from_llamacpp(std::unique_ptr<Checkpoint> ck, bool mtp = false);
// A hybrid checkpoint in our layout (an HF directory's, or a GGUF read through the above) seen in
// llama.cpp's layout, for the GGUF writer; nullptr when `ck` is not a hybrid. `ck` must outlive it.
std::unique_ptr<Checkpoint> hybrid_to_llamacpp(const Checkpoint& ck);

}  // namespace nvfp4
