// The architecture table (llama.cpp's src/llama-arch.cpp in our terms): one entry per model
// family with its names on both sides (GGUF `general.architecture`, HF `model_type` and
// `architectures`), the RoPE layout, the tensors of a layer (which are optional or required), and
// the block that runs it (src/models/<block>.cpp). Hyperparameters are read under GGUF keys
// (`<arch>.block_count`, ...) whatever the container: src/models/hf_config.cpp translates an HF
// config.json into those keys, refusing options an entry cannot honour.
//
// Adding an architecture is an entry in src/models/arch_table.cpp plus, where its block differs,
// one file under src/models/.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nvfp4 {

// How RoPE pairs the dimensions of a head, in the row order the checkpoint presents (GGUF order):
// adjacent (x[2i], x[2i+1]) as llama.cpp's LLAMA arch (whose HF q/k rows are permuted on
// conversion), or NeoX halves (x[i], x[i + d/2]) as HF stores them (Qwen2, Qwen3).
enum class RopeStyle { adjacent, neox };

// A per-layer tensor: GGUF name `blk.N.<gguf>.<suffix>`, HF name `model.layers.N.<hf>.<suffix>`.
struct ArchTensor {
  std::string_view gguf;  // "attn_q"
  std::string_view hf;    // "self_attn.q_proj"
};

enum class Need { none, optional, required };

struct ArchInfo {
  std::string_view name;                         // ours, for logs and messages: "mistral"
  std::string_view gguf_name;                    // GGUF general.architecture ("llama" for Mistral,
                                                 // as llama.cpp's converter writes it)
  std::vector<std::string_view> hf_model_types;  // config.json model_type
  std::vector<std::string_view> hf_architectures;  // config.json architectures[0]
  RopeStyle rope = RopeStyle::adjacent;
  bool permute_qk = false;     // HF -> GGUF: llama.cpp's q/k row permutation (adjacent RoPE)
  Need qkv_bias = Need::none;  // blk.N.attn_{q,k,v}.bias
  Need o_bias = Need::none;    // blk.N.attn_output.bias
  Need qk_norm = Need::none;   // blk.N.attn_{q,k}_norm.weight: RMSNorm over each head
  bool sliding_window = false;  // the family may declare one (refused where it would apply)
  std::string_view block = "dense";  // the block file that runs it (src/models/dense_block.cpp)
};

// Every entry, in table order.
std::span<const ArchInfo> architectures();
// By GGUF general.architecture (the first entry of that name); nullptr when unknown.
const ArchInfo* find_arch(std::string_view gguf_name);
// By HF model_type (or, when that is empty or unknown, architectures[0]); nullptr when unknown.
const ArchInfo* find_arch_hf(std::string_view model_type, std::string_view hf_architecture = "");
// "llama, mistral, qwen2, qwen3": for messages.
std::string arch_names();

// The per-layer and global tensor name pairs (GGUF <-> HF module) every entry draws from.
std::span<const ArchTensor> layer_tensors();
std::span<const ArchTensor> global_tensors();

// Per-frequency divisors of Llama 3's rope scaling (transformers' _compute_llama3_parameters,
// llama.cpp's rope_freqs.weight): factor[i] for i < head_dim/2 divides theta^(-2i/d). Computed in
// double from the pinned functions, rounded to float (the GGUF tensor is F32).
std::vector<float> rope_freq_factors_llama3(int64_t head_dim, double theta, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context);

}  // namespace nvfp4
