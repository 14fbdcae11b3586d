// config.json -> GGUF keys. transformers 4.x writes rope_theta and rope_scaling ({"type" or
// "rope_type", "factor", ...}); transformers 5 writes rope_parameters ({"rope_type",
// "rope_theta", ...}). Both are read.
#include "io/hf_config.h"

#include "nvfp4/error.h"

namespace nvfp4 {

namespace {

using Json = nlohmann::json;

gguf::Value u32(uint64_t v) {
  gguf::Value g;
  g.type = gguf::ValueType::u32;
  g.u = v;
  return g;
}
gguf::Value f32(double v) {
  gguf::Value g;
  g.type = gguf::ValueType::f32;
  g.f = static_cast<double>(static_cast<float>(v));
  return g;
}
gguf::Value str(const std::string& s) {
  gguf::Value g;
  g.type = gguf::ValueType::string;
  g.s = s;
  return g;
}

struct Reader {
  const Json& c;
  const std::string& file;
  MetaList& out;
  std::string a;  // "<arch>."

  void count(const char* hf, const std::string& key) const {
    if (!c.contains(hf) || c[hf].is_null()) return;
    if (!c[hf].is_number_integer() || c[hf].get<int64_t>() <= 0 || c[hf].get<int64_t>() > (int64_t{1} << 31))
      throw Error(file, "", "config.json '" + std::string(hf) + "'", "an integer in 1 .. 2^31", c[hf].dump());
    out.emplace_back(a + key, u32(c[hf].get<uint64_t>()));
  }
  void real(const Json& j, const char* hf, const std::string& key) const {
    if (!j.contains(hf) || j[hf].is_null()) return;
    if (!j[hf].is_number() || !(j[hf].get<double>() > 0))
      throw Error(file, "", "config.json '" + std::string(hf) + "'", "a number > 0", j[hf].dump());
    out.emplace_back(a + key, f32(j[hf].get<double>()));
  }
};

std::string text(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

gguf::Value boolean(bool v) {
  gguf::Value b;
  b.type = gguf::ValueType::boolean;
  b.u = v ? 1 : 0;
  return b;
}

// Mixture-of-experts keys, under llama.cpp's GGUF names: num_experts (Qwen, OLMoE) or
// num_local_experts (Mixtral) -> expert_count; num_experts_per_tok -> expert_used_count;
// moe_intermediate_size -> expert_feed_forward_length (Qwen; Mixtral and OLMoE size their experts
// by intermediate_size); shared_expert_intermediate_size -> expert_shared_feed_forward_length;
// norm_topk_prob -> expert_weights_norm.
template <class Refuse>
void moe_meta(const Json& c, Reader& r, const Refuse& refuse) {
  r.count(c.contains("num_local_experts") ? "num_local_experts" : "num_experts", "expert_count");
  r.count("num_experts_per_tok", "expert_used_count");
  r.count("moe_intermediate_size", "expert_feed_forward_length");
  r.count("shared_expert_intermediate_size", "expert_shared_feed_forward_length");
  if (c.contains("norm_topk_prob") && c["norm_topk_prob"].is_boolean())
    r.out.emplace_back(r.a + "expert_weights_norm", boolean(c["norm_topk_prob"].get<bool>()));
  // Every layer must be a MoE layer: Qwen's decoder_sparse_step / mlp_only_layers mix in dense ones.
  if (c.contains("decoder_sparse_step") && c["decoder_sparse_step"].is_number_integer() && c["decoder_sparse_step"].get<int64_t>() != 1)
    refuse("decoder_sparse_step", "1 (every layer routed)", c["decoder_sparse_step"]);
  if (c.contains("mlp_only_layers") && c["mlp_only_layers"].is_array() && !c["mlp_only_layers"].empty())
    refuse("mlp_only_layers", "[] (every layer routed)", c["mlp_only_layers"]);
  if (c.contains("clip_qkv") && !c["clip_qkv"].is_null()) refuse("clip_qkv", "null", c["clip_qkv"]);
}

}  // namespace

const ArchInfo* hf_config_arch(const Json& config) {
  std::string hf_arch;
  if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
      config["architectures"][0].is_string())
    hf_arch = config["architectures"][0].get<std::string>();
  return find_arch_hf(text(config, "model_type"), hf_arch);
}

MetaList hf_config_meta(const Json& c, const std::string& file) {
  MetaList out;
  if (!c.is_object()) throw Error(file, "", "config.json is not an object", "{...}", c.dump().substr(0, 40));
  const ArchInfo* arch = hf_config_arch(c);
  const std::string name = arch ? std::string(arch->gguf_name) : text(c, "model_type");
  out.emplace_back("general.architecture", str(name));
  Reader r{c, file, out, name + "."};
  r.count("num_hidden_layers", "block_count");
  r.count("hidden_size", "embedding_length");
  r.count("intermediate_size", "feed_forward_length");
  r.count("num_attention_heads", "attention.head_count");
  r.count("num_key_value_heads", "attention.head_count_kv");
  r.count("head_dim", "attention.key_length");
  r.count("head_dim", "attention.value_length");
  r.count("max_position_embeddings", "context_length");
  r.count("vocab_size", "vocab_size");
  r.real(c, "rms_norm_eps", "attention.layer_norm_rms_epsilon");
  // RoPE: rope_parameters (transformers 5) or rope_theta + rope_scaling (4.x).
  const Json* rope = nullptr;
  if (c.contains("rope_parameters") && c["rope_parameters"].is_object()) rope = &c["rope_parameters"];
  else if (c.contains("rope_scaling") && c["rope_scaling"].is_object()) rope = &c["rope_scaling"];
  r.real(c, "rope_theta", "rope.freq_base");
  if (rope) r.real(*rope, "rope_theta", "rope.freq_base");
  if (!arch) return out;  // unknown family: Model::load refuses it by name

  const auto refuse = [&](const std::string& key, const std::string& expected, const Json& found) {
    throw Error(file, "", "config.json '" + key + "' is not supported for " + std::string(arch->name), expected,
                found.dump());
  };
  for (const char* act : {"hidden_act", "hidden_activation"})
    if (c.contains(act) && !c[act].is_null() && c[act] != "silu") refuse(act, "\"silu\"", c[act]);
  if (c.contains("mlp_bias") && c["mlp_bias"].is_boolean() && c["mlp_bias"].get<bool>()) refuse("mlp_bias", "false", c["mlp_bias"]);
  if (c.contains("partial_rotary_factor") && c["partial_rotary_factor"].is_number() &&
      c["partial_rotary_factor"].get<double>() != 1.0)
    refuse("partial_rotary_factor", "1.0", c["partial_rotary_factor"]);
  if (rope) {
    std::string type = text(*rope, "rope_type");
    if (type.empty()) type = text(*rope, "type");
    const std::string where = c.contains("rope_parameters") ? "rope_parameters.rope_type" : "rope_scaling.rope_type";
    if (type == "llama3" || type == "linear") {
      out.emplace_back(r.a + "rope.scaling.type", str(type));
      r.real(*rope, "factor", "rope.scaling.factor");
      if (type == "llama3") {
        for (const char* k : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
          if (!rope->contains(k) || !(*rope)[k].is_number()) refuse(where.substr(0, where.find('.')) + "." + k, "a number", rope->value(k, Json()));
        r.real(*rope, "original_max_position_embeddings", "rope.scaling.original_context_length");
        r.real(*rope, "low_freq_factor", "rope.scaling.low_freq_factor");
        r.real(*rope, "high_freq_factor", "rope.scaling.high_freq_factor");
      }
    } else if (!type.empty() && type != "default") {
      refuse(where, "default, linear or llama3", Json(type));
    }
  }
  // A sliding window applies when declared (Mistral) or switched on (Qwen2/3 use_sliding_window).
  if (arch->sliding_window && c.contains("sliding_window") && c["sliding_window"].is_number_integer()) {
    const bool on = c.contains("use_sliding_window") ? c["use_sliding_window"].is_boolean() && c["use_sliding_window"].get<bool>() : true;
    if (on) r.count("sliding_window", "attention.sliding_window");
  }
  if (arch->moe != Need::none) moe_meta(c, r, refuse);
  if (c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean()) {
    out.emplace_back("nvfp4.hf.tie_word_embeddings", boolean(c["tie_word_embeddings"].get<bool>()));
  }
  return out;
}

}  // namespace nvfp4
