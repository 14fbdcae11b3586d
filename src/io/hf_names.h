// Hugging Face tensor names <-> canonical GGUF names (the architecture table's pairs), and
// llama.cpp's q/k row permutation (convert_hf_to_gguf.py's LlamaModel.permute): within each head of hd rows, HF row
// i*(hd/2) + j becomes GGUF row 2*j + i, so that RoPE pairs adjacent rows as llama.cpp's LLAMA
// arch expects.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace nvfp4::hf {

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight";
// "model.layers.3.mlp.experts.7.up_proj.weight" -> "blk.3.ffn_up_exps.7.weight" (expert 7 of the
// stacked ffn_up_exps); unmapped names unchanged.
std::string to_gguf_name(const std::string& hf, std::string_view arch = {});
// The inverse, in the spelling of table entry `arch` (its name: "mixtral"; empty: the common one):
// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight".
std::string to_hf_name(const std::string& gguf, std::string_view arch = {});
// "blk.3.ffn_up_exps.7.weight" -> true with stacked "blk.3.ffn_up_exps.weight" and expert 7.
bool split_expert_name(const std::string& name, std::string& stacked, int64_t& expert);
// The inverse: ("blk.3.ffn_up_exps.weight", 7) -> "blk.3.ffn_up_exps.7.weight".
std::string expert_name(const std::string& stacked, int64_t expert);
// The HF row that lands at GGUF row `r` of a q/k projection with `heads` heads of n_out/heads rows.
int64_t permuted_source_row(int64_t r, int64_t n_out, int64_t heads);

}  // namespace nvfp4::hf
