// The architecture table (llama.cpp's src/llama-arch.cpp in our terms): one entry per model
// family with its names on both sides (GGUF `general.architecture`, HF `model_type` and
// `architectures`), the RoPE layout, the tensors of a layer (which are optional or required), and
// the block that runs it (src/models/<block>.cpp). Hyperparameters are read under GGUF keys
// (`<arch>.block_count`, ...) whatever the container: src/io/hf_config.cpp translates an HF
// config.json into those keys, refusing options an entry cannot honour.
//
// Adding an architecture is an entry in src/io/arch_table.cpp plus, where its block differs,
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
  std::string_view arch = {};  // the entry this HF spelling belongs to (GGUF -> HF); empty: any
};

enum class Need { none, optional, required };

// How a mixture-of-experts router turns its n_expert logits into the weights of the k experts it
// selects (docs/DETERMINISM.md pins the arithmetic). The selection is always the k largest logits
// (softmax is monotonic), equal logits going to the lower expert index.
//   softmax_all: p = softmax over all n_expert logits; weights p of the k selected, divided by their
//                sum when the checkpoint says so (norm_topk_prob / expert_weights_norm): Qwen2-MoE,
//                Qwen3-MoE, OLMoE.
//   softmax_topk: softmax over the k selected logits (Mixtral). Equal, in exact arithmetic, to
//                softmax_all renormalised, which is how llama.cpp computes it.
//   sigmoid_bias: s = sigmoid(l); the k largest s + e_score_correction_bias (within the topk_group
//                best of n_group groups, a group scored by its two largest); weights s of the k,
//                divided by their sum when asked, times routed_scaling_factor (Nemotron-H,
//                DeepSeek-V3's router).
enum class MoeGating { softmax_all, softmax_topk, sigmoid_bias };

// Where RMSNorm of q and k applies (qk_norm): over each head (Qwen3, weights [head_dim]) or over
// the whole projection (OLMoE, weights [n_head * head_dim] and [n_head_kv * head_dim]).
enum class QkNormSpan { head, full };

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
  QkNormSpan qk_norm_span = QkNormSpan::head;
  bool sliding_window = false;  // the family may declare one (refused where it would apply)
  // Mixture of experts: the FFN is routed experts (blk.N.ffn_gate_inp + ffn_{gate,up,down}_exps)
  // when the checkpoint says <arch>.expert_count; `required` families have no dense FFN.
  Need moe = Need::none;
  MoeGating gating = MoeGating::softmax_all;
  bool norm_topk_default = false;  // renormalise the k weights when the checkpoint does not say
  Need shared_expert = Need::none;  // qwen2_moe: ffn_{gate,up,down}_shexp + sigmoid ffn_gate_inp_shexp
  // Gated DeltaNet hybrids (Qwen3.5 / Qwen3.6 / Qwen3-Next): every <arch>.full_attention_interval-th
  // layer is full attention, the others linear attention with a recurrent state (llama.cpp's
  // convention); q_proj makes the attention's output gate beside the queries; RoPE over the first
  // rope.dimension_count dimensions of a head; RMSNorm weights zero-centred in HF files ((1 + w),
  // stored with the 1 added in GGUF as llama.cpp writes them).
  bool gated_delta = false;
  bool fused_qkvz = false;  // qwen3_next: in_proj_qkvz and in_proj_ba, grouped per key head
  std::string_view block;  // the family file whose block runs it (src/models/<block>.cpp)
};

// Every entry, in table order.
std::span<const ArchInfo> architectures();
// By GGUF general.architecture: the first entry of that name whose `moe` admits `experts` (GGUF
// "llama" is Llama without experts and Mixtral with them); nullptr when unknown.
const ArchInfo* find_arch(std::string_view gguf_name, bool experts = false);
// By HF model_type (or, when that is empty or unknown, architectures[0]); nullptr when unknown.
const ArchInfo* find_arch_hf(std::string_view model_type, std::string_view hf_architecture = "");
// "llama, mistral, qwen2, qwen3": for messages.
std::string arch_names();

// The per-layer and global tensor name pairs (GGUF <-> HF module) every entry draws from.
std::span<const ArchTensor> layer_tensors();
std::span<const ArchTensor> global_tensors();
// Per-expert tensors: GGUF `blk.N.<gguf>.E.<suffix>` (expert E of llama.cpp's stacked
// `blk.N.<gguf>.<suffix>`), HF `model.layers.N.<hf with '*' replaced by E>.<suffix>`. Several HF
// spellings map to one GGUF name (Mixtral's block_sparse_moe.experts.*.w1); `arch` picks the
// spelling of the inverse map (empty: the first).
struct ArchExpertTensor {
  std::string_view gguf;  // "ffn_gate_exps"
  std::string_view hf;    // "mlp.experts.*.gate_proj"
  std::string_view arch;  // the table entry this spelling belongs to; empty: every other
};
std::span<const ArchExpertTensor> expert_tensors();

// Per-frequency divisors of Llama 3's rope scaling (transformers' _compute_llama3_parameters,
// llama.cpp's rope_freqs.weight): factor[i] for i < head_dim/2 divides theta^(-2i/d). Computed in
// double from the pinned functions, rounded to float (the GGUF tensor is F32).
std::vector<float> rope_freq_factors_llama3(int64_t head_dim, double theta, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context);

}  // namespace nvfp4
