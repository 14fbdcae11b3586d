// Hugging Face tensor names <-> canonical GGUF names (the architecture table's pairs), and
// llama.cpp's q/k row permutation (convert_hf_to_gguf.py's LlamaModel.permute): within each head of hd rows, HF row
// i*(hd/2) + j becomes GGUF row 2*j + i, so that RoPE pairs adjacent rows as llama.cpp's LLAMA
// arch expects.
#pragma once
#include <cstdint>
#include <string>

namespace nvfp4::hf {

// "model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight"; unmapped names unchanged.
std::string to_gguf_name(const std::string& hf);
// The inverse: "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight".
std::string to_hf_name(const std::string& gguf);
// The HF row that lands at GGUF row `r` of a q/k projection with `heads` heads of n_out/heads rows.
int64_t permuted_source_row(int64_t r, int64_t n_out, int64_t heads);

}  // namespace nvfp4::hf
