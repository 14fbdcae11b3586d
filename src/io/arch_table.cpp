// The architecture table. Names checked against llama.cpp (src/llama-arch.cpp: LLM_ARCH_NAMES,
// LLM_TENSOR_NAMES; convert_hf_to_gguf.py: which HF classes map to which arch, and that only the
// LLAMA arch permutes q/k) and transformers' modeling files (module names, Qwen3's q_norm/k_norm,
// Qwen2's q/k/v bias).
#include <algorithm>

#include "nvfp4/arch.h"
#include "kernels/pinned_math.h"

namespace nvfp4 {

namespace {

const ArchInfo kArchs[] = {
    // Llama 2 and 3.x (llama3 / linear rope scaling); attention_bias when config.json says so.
    {.name = "llama", .gguf_name = "llama", .hf_model_types = {"llama"},
     .hf_architectures = {"LlamaForCausalLM"}, .rope = RopeStyle::adjacent, .permute_qk = true,
     .qkv_bias = Need::optional, .o_bias = Need::optional, .block = "llama"},
    // Mistral: llama.cpp converts MistralForCausalLM to its LLAMA arch (so GGUF says "llama").
    {.name = "mistral", .gguf_name = "llama", .hf_model_types = {"mistral"},
     .hf_architectures = {"MistralForCausalLM"}, .rope = RopeStyle::adjacent, .permute_qk = true,
     .sliding_window = true, .block = "mistral"},
    // Qwen2 / Qwen2.5: q/k/v bias, NeoX RoPE on HF's row order.
    {.name = "qwen2", .gguf_name = "qwen2", .hf_model_types = {"qwen2"},
     .hf_architectures = {"Qwen2ForCausalLM"}, .rope = RopeStyle::neox, .qkv_bias = Need::required,
     .sliding_window = true, .block = "qwen2"},
    // Qwen3: RMSNorm over each q and k head before RoPE, head_dim independent of hidden/heads.
    {.name = "qwen3", .gguf_name = "qwen3", .hf_model_types = {"qwen3"},
     .hf_architectures = {"Qwen3ForCausalLM"}, .rope = RopeStyle::neox, .qk_norm = Need::required,
     .sliding_window = true, .block = "qwen3"},
    // Mixtral: llama.cpp converts it to its LLAMA arch with expert_count (so GGUF says "llama");
    // softmax over the k selected logits.
    {.name = "mixtral", .gguf_name = "llama", .hf_model_types = {"mixtral"},
     .hf_architectures = {"MixtralForCausalLM"}, .rope = RopeStyle::adjacent, .permute_qk = true,
     .sliding_window = true, .moe = Need::required, .gating = MoeGating::softmax_topk, .block = "mixtral"},
    // Qwen2-MoE: Qwen2 attention; routed experts plus one shared expert behind a sigmoid gate.
    {.name = "qwen2_moe", .gguf_name = "qwen2moe", .hf_model_types = {"qwen2_moe"},
     .hf_architectures = {"Qwen2MoeForCausalLM"}, .rope = RopeStyle::neox, .qkv_bias = Need::required,
     .sliding_window = true, .moe = Need::required, .norm_topk_default = false, .shared_expert = Need::required, .block = "qwen2_moe"},
    // Qwen3-MoE: Qwen3 attention; routed experts, weights renormalised (norm_topk_prob).
    {.name = "qwen3_moe", .gguf_name = "qwen3moe", .hf_model_types = {"qwen3_moe"},
     .hf_architectures = {"Qwen3MoeForCausalLM"}, .rope = RopeStyle::neox, .qk_norm = Need::required,
     .sliding_window = true, .moe = Need::required, .norm_topk_default = true, .block = "qwen3_moe"},
    // OLMoE: RMSNorm over the whole q and k projections; routed experts, not renormalised.
    {.name = "olmoe", .gguf_name = "olmoe", .hf_model_types = {"olmoe"},
     .hf_architectures = {"OlmoeForCausalLM"}, .rope = RopeStyle::neox, .qk_norm = Need::required,
     .qk_norm_span = QkNormSpan::full, .moe = Need::required, .norm_topk_default = false, .block = "olmoe"},
    // Qwen3.5 / Qwen3.6 dense (the text model, or the text of the VLM release under
    // model.language_model): Gated DeltaNet layers between full-attention ones with an output gate,
    // q/k RMSNorm and partial NeoX RoPE; zero-centred RMSNorms.
    {.name = "qwen3_5", .gguf_name = "qwen35", .hf_model_types = {"qwen3_5_text", "qwen3_5"},
     .hf_architectures = {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"}, .rope = RopeStyle::neox,
     .qk_norm = Need::required, .gated_delta = true, .block = "qwen3_5"},
    // Qwen3.5 / Qwen3.6 MoE: the same layers; routed experts (renormalised) and a sigmoid-gated shared expert.
    {.name = "qwen3_5_moe", .gguf_name = "qwen35moe", .hf_model_types = {"qwen3_5_moe_text", "qwen3_5_moe"},
     .hf_architectures = {"Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration"}, .rope = RopeStyle::neox,
     .qk_norm = Need::required, .moe = Need::required, .norm_topk_default = true, .shared_expert = Need::required,
     .gated_delta = true, .block = "qwen3_5"},
    // Qwen3-Next: as qwen3_5_moe with the linear-attention inputs fused per key head.
    {.name = "qwen3_next", .gguf_name = "qwen3next", .hf_model_types = {"qwen3_next"},
     .hf_architectures = {"Qwen3NextForCausalLM"}, .rope = RopeStyle::neox, .qk_norm = Need::required,
     .moe = Need::required, .norm_topk_default = true, .shared_expert = Need::required, .gated_delta = true,
     .fused_qkvz = true, .block = "qwen3_5"},
    // Gemma 4 (the text model, or the text of the multimodal release under model.language_model;
    // src/models/gemma4.cpp): sliding-window and global layers with their own head size, KV heads
    // and RoPE, q/k RMSNorm and a weightless v norm, norms after attention and FFN, GeGLU, a
    // scalar per layer, soft-capped logits. Gemma 4 12B's "unified" release (gemma4_unified: an
    // encoder-free multimodal model) has the same decoder, without per-layer embeddings or experts.
    {.name = "gemma4", .gguf_name = "gemma4", .hf_model_types = {"gemma4_text", "gemma4", "gemma4_unified_text", "gemma4_unified"},
     .hf_architectures = {"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4UnifiedForCausalLM",
                          "Gemma4UnifiedForConditionalGeneration"},
     .rope = RopeStyle::neox,
     .qk_norm = Need::required, .moe = Need::optional, .norm_topk_default = true, .block = "gemma4"},
    // Muse Glimmer (the text of its release under model.language_model; src/models/muse_glimmer.cpp):
    // sliding layers with RoPE and full NoPE ones, weightless q/k norms (q times qk_scale_factor),
    // an output gate beside q/k/v, four zero-centred norms, a normed embedding, scaled and capped logits.
    {.name = "muse_glimmer", .gguf_name = "muse-glimmer", .hf_model_types = {"muse_glimmer_text", "muse_glimmer"},
     .hf_architectures = {"MuseGlimmerForConditionalGeneration"}, .rope = RopeStyle::neox, .qk_norm = Need::optional,
     .block = "muse_glimmer"},
    // Nemotron-H / Nemotron 3 (src/models/nemotron_h.cpp): Mamba-2, attention without RoPE,
    // squared-ReLU MLP and MoE layers in a pattern; a sigmoid router with a correction bias.
    {.name = "nemotron_h", .gguf_name = "nemotron_h", .hf_model_types = {"nemotron_h"},
     .hf_architectures = {"NemotronHForCausalLM"}, .rope = RopeStyle::neox, .moe = Need::optional,
     .gating = MoeGating::sigmoid_bias, .norm_topk_default = true, .shared_expert = Need::optional, .block = "nemotron_h"},
};

const ArchTensor kLayer[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    // Mixture of experts: the router, the shared expert and its gate (llama.cpp's names).
    {"ffn_gate_inp", "mlp.gate"},        {"ffn_gate_inp", "block_sparse_moe.gate", "mixtral"},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj"}, {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj"}, {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
    // Gated DeltaNet (gguf-py's names for qwen35 / qwen3next). A_log keeps its HF values under a
    // name of ours (GGUF's ssm_a holds -exp(A_log)); dt_bias is GGUF's ssm_dt.bias.
    {"attn_qkv", "linear_attn.in_proj_qkv"},  {"attn_gate", "linear_attn.in_proj_z"},
    {"ssm_beta", "linear_attn.in_proj_b"},    {"ssm_alpha", "linear_attn.in_proj_a"},
    {"ssm_in", "linear_attn.in_proj_qkvz"},   {"ssm_ba", "linear_attn.in_proj_ba"},
    {"ssm_conv1d", "linear_attn.conv1d"},     {"ssm_norm", "linear_attn.norm"},
    {"ssm_out", "linear_attn.out_proj"},
    // Gemma 4's four norms per block (llama.cpp's names): input_layernorm is attn_norm as for every
    // family; its post_attention_layernorm follows the attention, pre_feedforward_layernorm is
    // the FFN's input norm.
    {"post_attention_norm", "post_attention_layernorm", "gemma4"}, {"ffn_norm", "pre_feedforward_layernorm", "gemma4"},
    {"post_ffw_norm", "post_feedforward_layernorm", "gemma4"},
    // Gemma 4's per-layer input (llama.cpp's gemma3n names): gate, projection, norm.
    {"inp_gate", "per_layer_input_gate", "gemma4"}, {"proj", "per_layer_projection", "gemma4"},
    {"post_norm", "post_per_layer_input_norm", "gemma4"},
    // Gemma 4's MoE block beside the MLP: the router, the experts' input norm and the two outputs' norms.
    {"ffn_gate_inp", "router.proj", "gemma4"}, {"pre_ffw_norm_2", "pre_feedforward_layernorm_2", "gemma4"},
    {"post_ffw_norm_1", "post_feedforward_layernorm_1", "gemma4"}, {"post_ffw_norm_2", "post_feedforward_layernorm_2", "gemma4"},
    // Muse Glimmer: Gemma 4's four norms (llama.cpp's names) and the attention's output gate.
    {"post_attention_norm", "post_attention_layernorm", "muse_glimmer"}, {"ffn_norm", "pre_feedforward_layernorm", "muse_glimmer"},
    {"post_ffw_norm", "post_feedforward_layernorm", "muse_glimmer"}, {"attn_gate", "self_attn.gate_proj", "muse_glimmer"},
    // Nemotron-H (backbone.layers.N.* read as model.layers.N.*): one norm and one mixer per layer.
    {"attn_norm", "norm", "nemotron_h"},              {"ssm_in", "mixer.in_proj", "nemotron_h"},
    {"ssm_conv1d", "mixer.conv1d", "nemotron_h"},     {"ssm_norm", "mixer.norm", "nemotron_h"},
    {"ssm_out", "mixer.out_proj", "nemotron_h"},      {"attn_q", "mixer.q_proj", "nemotron_h"},
    {"attn_k", "mixer.k_proj", "nemotron_h"},         {"attn_v", "mixer.v_proj", "nemotron_h"},
    {"attn_output", "mixer.o_proj", "nemotron_h"},    {"ffn_up", "mixer.up_proj", "nemotron_h"},
    {"ffn_down", "mixer.down_proj", "nemotron_h"},    {"ffn_gate_inp", "mixer.gate", "nemotron_h"},
    {"ffn_up_shexp", "mixer.shared_experts.up_proj", "nemotron_h"},
    {"ffn_down_shexp", "mixer.shared_experts.down_proj", "nemotron_h"},
    {"ffn_latent_in", "mixer.fc1_latent_proj", "nemotron_h"}, {"ffn_latent_out", "mixer.fc2_latent_proj", "nemotron_h"},
};

// The routed experts, one 2-D tensor per expert on the HF side (transformers' own checkpoints and
// ModelOpt's export; Mixtral's original w1/w3/w2 names too). The first spelling of an entry is
// the one written.
const ArchExpertTensor kExpert[] = {
    {"ffn_gate_exps", "mlp.experts.*.gate_proj", ""},
    {"ffn_up_exps", "mlp.experts.*.up_proj", ""},
    {"ffn_down_exps", "mlp.experts.*.down_proj", ""},
    {"ffn_gate_exps", "block_sparse_moe.experts.*.w1", "mixtral"},
    {"ffn_up_exps", "block_sparse_moe.experts.*.w3", "mixtral"},
    {"ffn_down_exps", "block_sparse_moe.experts.*.w2", "mixtral"},
    // llm-compressor 0.14 with transformers 5 writes Mixtral's experts under these names (read
    // only: transformers itself does not load them back).
    {"ffn_gate_exps", "block_sparse_moe.experts.*.gate_proj", "mixtral"},
    {"ffn_up_exps", "block_sparse_moe.experts.*.up_proj", "mixtral"},
    {"ffn_down_exps", "block_sparse_moe.experts.*.down_proj", "mixtral"},
    // Gemma 4 (experts beside the MLP, not under it); transformers' stacked experts.gate_up_proj
    // and down_proj read as these (io/stacked_experts.h).
    {"ffn_gate_exps", "experts.*.gate_proj", "gemma4"},
    {"ffn_up_exps", "experts.*.up_proj", "gemma4"},
    {"ffn_down_exps", "experts.*.down_proj", "gemma4"},
    // Nemotron-H's non-gated experts (up and down only).
    {"ffn_up_exps", "mixer.experts.*.up_proj", "nemotron_h"},
    {"ffn_down_exps", "mixer.experts.*.down_proj", "nemotron_h"},
};

const ArchTensor kGlobal[] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"},
    // Gemma 4's per-layer embeddings (llama.cpp's gemma3n names).
    {"per_layer_token_embd", "model.embed_tokens_per_layer"}, {"per_layer_model_proj", "model.per_layer_model_projection"},
    {"per_layer_proj_norm", "model.per_layer_projection_norm"},
    {"token_embd", "model.embeddings", "nemotron_h"}, {"output_norm", "model.norm_f", "nemotron_h"}};

}  // namespace

std::span<const ArchInfo> architectures() { return kArchs; }
std::span<const ArchTensor> layer_tensors() { return kLayer; }
std::span<const ArchTensor> global_tensors() { return kGlobal; }
std::span<const ArchExpertTensor> expert_tensors() { return kExpert; }

const ArchInfo* find_arch(std::string_view gguf_name, bool experts) {
  for (const ArchInfo& a : kArchs)
    if (a.gguf_name == gguf_name && (experts ? a.moe != Need::none : a.moe != Need::required)) return &a;
  for (const ArchInfo& a : kArchs)  // a family of that name without the matching form: Model::load says why
    if (a.gguf_name == gguf_name) return &a;
  return nullptr;
}

const ArchInfo* find_arch_hf(std::string_view model_type, std::string_view hf_architecture) {
  for (const ArchInfo& a : kArchs)
    if (std::find(a.hf_model_types.begin(), a.hf_model_types.end(), model_type) != a.hf_model_types.end()) return &a;
  for (const ArchInfo& a : kArchs)
    if (!hf_architecture.empty() &&
        std::find(a.hf_architectures.begin(), a.hf_architectures.end(), hf_architecture) != a.hf_architectures.end())
      return &a;
  return nullptr;
}

std::string arch_names() {
  std::string s;
  for (const ArchInfo& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

std::vector<float> rope_freq_factors_llama3(int64_t head_dim, double theta, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context) {
  // wavelen_i = 2 pi / theta^(-2i/d). Above original/low: divide by factor; below original/high:
  // keep; between: 1 / ((1 - s) / factor + s) with s = (original / wavelen - low) / (high - low).
  constexpr double kPi = 3.14159265358979323846;
  const double low_wavelen = original_context / low_freq_factor, high_wavelen = original_context / high_freq_factor;
  const double lt = pinned::log(theta);
  std::vector<float> out(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double freq = pinned::exp(-(2.0 * static_cast<double>(i) / static_cast<double>(head_dim)) * lt);
    const double wavelen = 2.0 * kPi / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = factor;
    } else if (wavelen >= high_wavelen) {
      const double s = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - s) / factor + s);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace nvfp4
