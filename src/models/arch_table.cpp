// The architecture table. Names checked against llama.cpp (src/llama-arch.cpp: LLM_ARCH_NAMES,
// LLM_TENSOR_NAMES; convert_hf_to_gguf.py: which HF classes map to which arch, and that only the
// LLAMA arch permutes q/k) and transformers' modeling files (module names, Qwen3's q_norm/k_norm,
// Qwen2's q/k/v bias).
#include <algorithm>

#include "nvfp4/arch.h"
#include "runtime/pinned_math.h"

namespace nvfp4 {

namespace {

const ArchInfo kArchs[] = {
    // Llama 2 and 3.x (llama3 / linear rope scaling); attention_bias when config.json says so.
    {.name = "llama", .gguf_name = "llama", .hf_model_types = {"llama"},
     .hf_architectures = {"LlamaForCausalLM"}, .rope = RopeStyle::adjacent, .permute_qk = true,
     .qkv_bias = Need::optional, .o_bias = Need::optional},
    // Mistral: llama.cpp converts MistralForCausalLM to its LLAMA arch (so GGUF says "llama").
    {.name = "mistral", .gguf_name = "llama", .hf_model_types = {"mistral"},
     .hf_architectures = {"MistralForCausalLM"}, .rope = RopeStyle::adjacent, .permute_qk = true,
     .sliding_window = true},
    // Qwen2 / Qwen2.5: q/k/v bias, NeoX RoPE on HF's row order.
    {.name = "qwen2", .gguf_name = "qwen2", .hf_model_types = {"qwen2"},
     .hf_architectures = {"Qwen2ForCausalLM"}, .rope = RopeStyle::neox, .qkv_bias = Need::required,
     .sliding_window = true},
    // Qwen3: RMSNorm over each q and k head before RoPE, head_dim independent of hidden/heads.
    {.name = "qwen3", .gguf_name = "qwen3", .hf_model_types = {"qwen3"},
     .hf_architectures = {"Qwen3ForCausalLM"}, .rope = RopeStyle::neox, .qk_norm = Need::required,
     .sliding_window = true},
};

const ArchTensor kLayer[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};

const ArchTensor kGlobal[] = {
    {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};

}  // namespace

std::span<const ArchInfo> architectures() { return kArchs; }
std::span<const ArchTensor> layer_tensors() { return kLayer; }
std::span<const ArchTensor> global_tensors() { return kGlobal; }

const ArchInfo* find_arch(std::string_view gguf_name) {
  for (const ArchInfo& a : kArchs)
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
