// config.json -> GGUF keys. transformers 4.x writes rope_theta and rope_scaling ({"type" or
// "rope_type", "factor", ...}); transformers 5 writes rope_parameters ({"rope_type",
// "rope_theta", ...}). Both are read.
#include "io/hf_config.h"

#include <cmath>
#include <tuple>

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
  std::map<std::string, std::string>* origin = nullptr;  // GGUF key -> config.json key
  void from(const std::string& key, const char* hf) const {
    if (origin) (*origin)[key] = hf;
  }

  void count(const char* hf, const std::string& key) const {
    from(a + key, hf);  // also when absent: "missing metadata" then names the config.json key
    if (!c.contains(hf) || c[hf].is_null()) return;
    if (!c[hf].is_number_integer() || c[hf].get<int64_t>() <= 0 || c[hf].get<int64_t>() > (int64_t{1} << 31))
      throw Error(file, "", "config.json '" + std::string(hf) + "'", "an integer in 1 .. 2^31", c[hf].dump());
    out.emplace_back(a + key, u32(c[hf].get<uint64_t>()));
  }
  void real(const Json& j, const char* hf, const std::string& key) const {
    from(a + key, hf);
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

// Gated DeltaNet hybrids (Qwen3.5 / Qwen3.6 / Qwen3-Next), under llama.cpp's qwen35 / qwen3next
// keys: linear_conv_kernel_dim -> ssm.conv_kernel, linear_key_head_dim -> ssm.state_size,
// linear_num_key_heads -> ssm.group_count, linear_num_value_heads -> ssm.time_step_rank, their
// value width -> ssm.inner_size; layer_types (or full_attention_interval) -> full_attention_interval;
// head_dim x partial_rotary_factor -> rope.dimension_count.
template <class Refuse>
void hybrid_meta(const Json& c, Reader& r, const Refuse& refuse, const Json* rope) {
  const auto need_int = [&](const char* key) -> int64_t {
    if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() < 1 || c[key].get<int64_t>() > (int64_t{1} << 31))
      refuse(key, "an integer in 1 .. 2^31", c.value(key, Json()));
    return c[key].get<int64_t>();
  };
  r.count("linear_conv_kernel_dim", "ssm.conv_kernel");
  r.count("linear_key_head_dim", "ssm.state_size");
  r.count("linear_num_key_heads", "ssm.group_count");
  r.count("linear_num_value_heads", "ssm.time_step_rank");
  const int64_t kernel = need_int("linear_conv_kernel_dim"), nk = need_int("linear_num_key_heads");
  const int64_t nv = need_int("linear_num_value_heads"), dv = need_int("linear_value_head_dim");
  need_int("linear_key_head_dim");
  if (kernel < 2 || kernel > 8) refuse("linear_conv_kernel_dim", "2 to 8", c["linear_conv_kernel_dim"]);
  if (nv % nk != 0) refuse("linear_num_value_heads", "a multiple of linear_num_key_heads (" + std::to_string(nk) + ")", c["linear_num_value_heads"]);
  r.out.emplace_back(r.a + "ssm.inner_size", u32(static_cast<uint64_t>(nv * dv)));
  // The recurrent state's dtype: this runtime keeps it in float32.
  for (const char* k : {"mamba_ssm_dtype", "linear_state_dtype"})
    if (c.contains(k) && !c[k].is_null() && c[k] != "float32") refuse(k, "\"float32\"", c[k]);
  if (c.contains("attn_output_gate") && !(c["attn_output_gate"].is_boolean() && c["attn_output_gate"].get<bool>()))
    refuse("attn_output_gate", "true", c["attn_output_gate"]);
  // The gate's function: sigmoid (transformers 5.17's only one); a later release's other kinds are refused.
  if (c.contains("output_gate_type") && !c["output_gate_type"].is_null() && c["output_gate_type"] != "sigmoid")
    refuse("output_gate_type", "\"sigmoid\"", c["output_gate_type"]);
  const int64_t n_layer = need_int("num_hidden_layers");
  int64_t interval = 0;
  if (c.contains("layer_types") && !c["layer_types"].is_null()) {
    const Json& lt = c["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != n_layer)
      refuse("layer_types", "an array of num_hidden_layers (" + std::to_string(n_layer) + ") layer types", lt);
    for (size_t i = 0; i < lt.size(); ++i) {
      if (lt[i] != "linear_attention" && lt[i] != "full_attention")
        refuse("layer_types[" + std::to_string(i) + "]", "\"linear_attention\" or \"full_attention\"", lt[i]);
      if (lt[i] == "full_attention" && interval == 0) interval = static_cast<int64_t>(i) + 1;
    }
    if (interval == 0) refuse("layer_types", "at least one full_attention layer", lt);
    for (size_t i = 0; i < lt.size(); ++i)
      if ((lt[i] == "full_attention") != ((static_cast<int64_t>(i) + 1) % interval == 0))
        refuse("layer_types[" + std::to_string(i) + "]",
               "every " + std::to_string(interval) + "th layer full attention, the others linear (full_attention_interval " +
                   std::to_string(interval) + ")",
               lt[i]);
  } else {
    interval = c.contains("full_attention_interval") ? need_int("full_attention_interval") : 4;
  }
  r.out.emplace_back(r.a + "full_attention_interval", u32(static_cast<uint64_t>(interval)));
  // Partial RoPE: rope_parameters.partial_rotary_factor (transformers 5) or the top-level key.
  double factor = 1.0;
  for (const Json* j : {&c, rope})
    if (j && j->contains("partial_rotary_factor") && !(*j)["partial_rotary_factor"].is_null()) {
      if (!(*j)["partial_rotary_factor"].is_number() || !((*j)["partial_rotary_factor"].get<double>() > 0) ||
          (*j)["partial_rotary_factor"].get<double>() > 1)
        refuse("partial_rotary_factor", "a number in (0, 1]", (*j)["partial_rotary_factor"]);
      factor = (*j)["partial_rotary_factor"].get<double>();
    }
  const int64_t head_dim = c.contains("head_dim") ? need_int("head_dim") : need_int("hidden_size") / need_int("num_attention_heads");
  const auto n_rot = static_cast<int64_t>(static_cast<double>(head_dim) * factor);  // transformers: int(head_dim * factor)
  if (n_rot < 2 || n_rot % 2 != 0) refuse("partial_rotary_factor", "an even number of rotated dimensions of head_dim " + std::to_string(head_dim), Json(factor));
  r.out.emplace_back(r.a + "rope.dimension_count", u32(static_cast<uint64_t>(n_rot)));
}

// Gemma 4 (text), under llama.cpp's gemma4 keys where it has them and ours beside:
// layer_types -> attention.sliding_window_pattern (a boolean per layer, true for a sliding one);
// sliding_window -> attention.sliding_window_swa (ours: attention.sliding_window would bound the
// context); the global layers' head_dim and num_key_value_heads (per_layer_config, or
// global_head_dim / num_global_key_value_heads as transformers derives them) ->
// attention.key_length_global, attention.head_count_kv_global; rope_parameters per layer type ->
// rope.freq_base (global), rope.freq_base_swa, rope.dimension_count_global /
// rope.dimension_count_swa (the rotated dimensions: all for "default", 2 x int(factor x head_dim
// // 2) for "proportional"); attention_k_eq_v -> attention.k_eq_v; final_logit_softcapping.
// What the engine does not run is refused naming the field.
template <class Refuse>
void gemma4_meta(const Json& c, Reader& r, const Refuse& refuse) {
  const auto need_int = [&](const char* key) -> int64_t {
    if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() < 1 || c[key].get<int64_t>() > (int64_t{1} << 31))
      refuse(key, "an integer in 1 .. 2^31", c.value(key, Json()));
    return c[key].get<int64_t>();
  };
  const auto flag = [&](const char* key) { return c.contains(key) && c[key].is_boolean() && c[key].get<bool>(); };
  // Gemma4TextConfig's defaults where config.json leaves a field out: per-layer embeddings of 256,
  // 4 KV heads, eps 1e-6, a window of 512. Gemma4UnifiedTextConfig (gemma4_unified_text) has no
  // per-layer embeddings and a window of 1024.
  const bool unified = c.contains("model_type") && c["model_type"] == "gemma4_unified_text";
  int64_t ple = unified ? 0 : 256;
  if (c.contains("hidden_size_per_layer_input") && !c["hidden_size_per_layer_input"].is_null()) {
    const Json& p = c["hidden_size_per_layer_input"];
    if (!p.is_number_integer() || p.get<int64_t>() < 0 || p.get<int64_t>() > (int64_t{1} << 20))
      refuse("hidden_size_per_layer_input", "an integer in 0 .. 2^20", p);
    ple = p.get<int64_t>();
  }
  // llama.cpp's gemma3n key; the table's rows (vocab_size_per_layer_input) are read from its shape.
  if (ple > 0) r.out.emplace_back(r.a + "embedding_length_per_layer_input", u32(static_cast<uint64_t>(ple)));
  if (!c.contains("num_key_value_heads")) r.out.emplace_back(r.a + "attention.head_count_kv", u32(4));
  if (!c.contains("rms_norm_eps")) r.out.emplace_back(r.a + "attention.layer_norm_rms_epsilon", f32(1e-6));
  if (flag("enable_moe_block")) {  // the experts beside the MLP (26B-A4B), under llama.cpp's keys
    for (const char* k : {"num_experts", "top_k_experts", "moe_intermediate_size"})
      if (!c.contains(k) || !c[k].is_number_integer() || c[k].get<int64_t>() < 1)
        refuse(std::string("enable_moe_block: ") + k, "an integer >= 1", c.value(k, Json()));
    r.count("num_experts", "expert_count");
    r.count("top_k_experts", "expert_used_count");
    r.count("moe_intermediate_size", "expert_feed_forward_length");
  }
  if (c.contains("num_kv_shared_layers") && !c["num_kv_shared_layers"].is_null()) {
    const Json& k = c["num_kv_shared_layers"];
    if (!k.is_number_integer() || k.get<int64_t>() < 0) refuse("num_kv_shared_layers", "an integer >= 0", k);
    r.out.emplace_back(r.a + "attention.shared_kv_layers", u32(k.get<uint64_t>()));  // llama.cpp's gemma3n key
  }
  if (c.contains("use_double_wide_mlp") && !c["use_double_wide_mlp"].is_null()) {
    if (!c["use_double_wide_mlp"].is_boolean()) refuse("use_double_wide_mlp", "a boolean", c["use_double_wide_mlp"]);
    r.out.emplace_back(r.a + "feed_forward_double_wide", boolean(flag("use_double_wide_mlp")));
  }
  if (flag("attention_bias")) refuse("attention_bias", "false", c["attention_bias"]);
  if (c.contains("use_bidirectional_attention") && c["use_bidirectional_attention"] == "all")
    refuse("use_bidirectional_attention", "null or \"vision\" (causal text)", c["use_bidirectional_attention"]);
  const int64_t n_layer = need_int("num_hidden_layers"), head_dim = need_int("head_dim");
  const int64_t n_kv = c.contains("num_key_value_heads") ? need_int("num_key_value_heads") : 4;
  // Layer types: transformers' default is 5 sliding to 1 global, the last layer always global.
  std::vector<bool> sliding(static_cast<size_t>(n_layer));
  for (int64_t i = 0; i < n_layer; ++i) sliding[static_cast<size_t>(i)] = (i + 1) % 6 != 0;
  if (c.contains("layer_types") && !c["layer_types"].is_null()) {
    const Json& lt = c["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != n_layer)
      refuse("layer_types", "an array of num_hidden_layers (" + std::to_string(n_layer) + ") layer types", lt);
    for (size_t i = 0; i < lt.size(); ++i) {
      if (lt[i] != "sliding_attention" && lt[i] != "full_attention")
        refuse("layer_types[" + std::to_string(i) + "]", "\"sliding_attention\" or \"full_attention\"", lt[i]);
      sliding[i] = lt[i] == "sliding_attention";
    }
  }
  sliding.back() = false;  // as transformers forces it
  gguf::Value pattern;
  pattern.type = gguf::ValueType::array;
  pattern.arr = gguf::Array(gguf::ValueType::boolean);
  for (bool b : sliding) pattern.arr.push_back(boolean(b));
  r.out.emplace_back(r.a + "attention.sliding_window_pattern", pattern);
  r.count("sliding_window", "attention.sliding_window_swa");
  if (!c.contains("sliding_window")) r.out.emplace_back(r.a + "attention.sliding_window_swa", u32(unified ? 1024 : 512));
  // The global layers' shape: per_layer_config (transformers 5.17 writes it), else as
  // Gemma4TextConfig derives it from global_head_dim (512) and num_global_key_value_heads.
  int64_t hd_g = c.contains("global_head_dim") ? need_int("global_head_dim") : 512, kv_g = n_kv;
  if (flag("attention_k_eq_v") && c.contains("num_global_key_value_heads") && !c["num_global_key_value_heads"].is_null())
    kv_g = need_int("num_global_key_value_heads");
  if (c.contains("per_layer_config") && c["per_layer_config"].is_object()) {
    bool first = true;
    for (int64_t i = 0; i < n_layer; ++i) {
      const std::string k = std::to_string(i);
      const Json o = c["per_layer_config"].contains(k) ? c["per_layer_config"][k] : Json::object();
      if (!o.is_object()) refuse("per_layer_config." + k, "an object", o);
      for (const auto& [key, v] : o.items())
        if (key != "head_dim" && key != "num_key_value_heads") refuse("per_layer_config." + k + "." + key, "head_dim or num_key_value_heads", v);
      const auto get = [&](const char* key, int64_t def) {
        if (!o.contains(key)) return def;
        if (!o[key].is_number_integer() || o[key].get<int64_t>() < 1) refuse("per_layer_config." + k + "." + key, "an integer >= 1", o[key]);
        return o[key].get<int64_t>();
      };
      const int64_t hd = get("head_dim", head_dim), kv = get("num_key_value_heads", n_kv);
      if (sliding[static_cast<size_t>(i)]) {
        if (hd != head_dim || kv != n_kv)
          refuse("per_layer_config." + k, "a sliding layer of head_dim " + std::to_string(head_dim) + " and " + std::to_string(n_kv) + " KV heads", o);
      } else if (first) {
        hd_g = hd;
        kv_g = kv;
        first = false;
      } else if (hd != hd_g || kv != kv_g) {
        refuse("per_layer_config." + k, "every global layer of one shape (head_dim " + std::to_string(hd_g) + ", " + std::to_string(kv_g) + " KV heads)", o);
      }
    }
  }
  r.out.emplace_back(r.a + "attention.key_length_global", u32(static_cast<uint64_t>(hd_g)));
  r.out.emplace_back(r.a + "attention.head_count_kv_global", u32(static_cast<uint64_t>(kv_g)));
  r.out.emplace_back(r.a + "attention.k_eq_v", boolean(flag("attention_k_eq_v")));
  // RoPE per layer type.
  Json rp = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? c["rope_parameters"] : Json::object();
  if (!rp.contains("sliding_attention")) rp["sliding_attention"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  if (!rp.contains("full_attention"))
    rp["full_attention"] = {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1000000.0}};
  for (const auto& [type, hd, base, dims] : {std::tuple<const char*, int64_t, const char*, const char*>{"sliding_attention", head_dim, "rope.freq_base_swa", "rope.dimension_count_swa"},
                                              {"full_attention", hd_g, "rope.freq_base", "rope.dimension_count_global"}}) {
    const std::string where = std::string("rope_parameters.") + type;
    const Json& p = rp[type];
    if (!p.is_object()) refuse(where, "an object", p);
    const std::string kind = p.contains("rope_type") && p["rope_type"].is_string() ? p["rope_type"].get<std::string>() : "default";
    if (kind != "default" && kind != "proportional") refuse(where + ".rope_type", "\"default\" or \"proportional\"", p["rope_type"]);
    if (p.contains("factor") && !p["factor"].is_null() && !(p["factor"].is_number() && p["factor"].get<double>() == 1.0))
      refuse(where + ".factor", "1 (or absent)", p["factor"]);
    double theta = 10000.0;
    if (p.contains("rope_theta")) {
      if (!p["rope_theta"].is_number() || !(p["rope_theta"].get<double>() > 0)) refuse(where + ".rope_theta", "a number > 0", p["rope_theta"]);
      theta = p["rope_theta"].get<double>();
    }
    int64_t pairs = hd / 2;  // "default" rotates the whole head (it reads no partial_rotary_factor)
    if (kind == "proportional" && p.contains("partial_rotary_factor") && !p["partial_rotary_factor"].is_null()) {
      const Json& f = p["partial_rotary_factor"];
      if (!f.is_number() || f.get<double>() < 0 || f.get<double>() > 1) refuse(where + ".partial_rotary_factor", "a number in [0, 1]", f);
      pairs = static_cast<int64_t>(std::floor(f.get<double>() * static_cast<double>(hd) / 2.0));  // int(f * hd // 2)
    }
    r.out.emplace_back(r.a + base, f32(theta));
    r.out.emplace_back(r.a + dims, u32(static_cast<uint64_t>(2 * pairs)));
  }
  if (c.contains("final_logit_softcapping") && !c["final_logit_softcapping"].is_null())
    r.real(c, "final_logit_softcapping", "final_logit_softcapping");
}

// Muse Glimmer (text), under llama.cpp's muse-glimmer keys where it has them and ours beside:
// layer_types -> attention.sliding_window_pattern (true: sliding); sliding_window ->
// attention.sliding_window; output_multiplier -> logit_scale; final_logit_softcapping;
// qk_scale_factor -> attention.qk_scale (ours: llama.cpp's GGUF holds it as the q norm's weight);
// post_norm_eps -> attention.post_norm_epsilon (ours: llama.cpp's graph has 1e-8). Missing fields
// take MuseGlimmerTextConfig's defaults. layer_rope_theta: RoPE at rope_theta on the sliding layers
// and none on the full ones, as transformers runs it (it reads the list only as on or off) and as
// llama.cpp does; another list is refused naming it.
template <class Refuse>
void muse_glimmer_meta(const Json& c, Reader& r, const Refuse& refuse) {
  if (!c.contains("num_hidden_layers") || !c["num_hidden_layers"].is_number_integer() || c["num_hidden_layers"].get<int64_t>() < 1 ||
      c["num_hidden_layers"].get<int64_t>() > (int64_t{1} << 16))
    refuse("num_hidden_layers", "an integer in 1 .. 65536", c.value("num_hidden_layers", Json()));
  const int64_t n_layer = c["num_hidden_layers"].get<int64_t>();
  if (c.contains("attention_bias") && c["attention_bias"].is_boolean() && c["attention_bias"].get<bool>())
    refuse("attention_bias", "false", c["attention_bias"]);
  std::vector<bool> sliding(static_cast<size_t>(n_layer));
  for (int64_t i = 0; i < n_layer; ++i) sliding[static_cast<size_t>(i)] = (n_layer - 1 - i) % 4 != 0;
  if (c.contains("layer_types") && !c["layer_types"].is_null()) {
    const Json& lt = c["layer_types"];
    if (!lt.is_array() || static_cast<int64_t>(lt.size()) != n_layer)
      refuse("layer_types", "an array of num_hidden_layers (" + std::to_string(n_layer) + ") layer types", lt);
    for (size_t i = 0; i < lt.size(); ++i) {
      if (lt[i] != "sliding_attention" && lt[i] != "full_attention")
        refuse("layer_types[" + std::to_string(i) + "]", "\"sliding_attention\" or \"full_attention\"", lt[i]);
      sliding[i] = lt[i] == "sliding_attention";
    }
  }
  gguf::Value pattern;
  pattern.type = gguf::ValueType::array;
  pattern.arr = gguf::Array(gguf::ValueType::boolean);
  for (bool b : sliding) pattern.arr.push_back(boolean(b));
  r.out.emplace_back(r.a + "attention.sliding_window_pattern", pattern);
  double theta = 10000.0;
  if (c.contains("rope_parameters") && c["rope_parameters"].is_object() && c["rope_parameters"].contains("rope_theta") &&
      c["rope_parameters"]["rope_theta"].is_number())
    theta = c["rope_parameters"]["rope_theta"].get<double>();
  if (c.contains("layer_rope_theta") && !c["layer_rope_theta"].is_null()) {
    const Json& t = c["layer_rope_theta"];
    if (!t.is_array() || static_cast<int64_t>(t.size()) != n_layer) refuse("layer_rope_theta", "an array of num_hidden_layers numbers", t);
    for (size_t i = 0; i < t.size(); ++i) {
      const bool ok = t[i].is_number() && (sliding[i] ? t[i].get<double>() == theta : t[i].get<double>() == 0.0);
      if (!ok)
        refuse("layer_rope_theta[" + std::to_string(i) + "]",
               sliding[i] ? "rope_theta (" + Json(theta).dump() + ") on a sliding layer" : "0 (NoPE) on a full layer", t[i]);
    }
  }
  const auto real_or = [&](const char* hf, const std::string& key, double def) {
    r.from(r.a + key, hf);
    double v = def;
    if (c.contains(hf) && !c[hf].is_null()) {
      if (!c[hf].is_number() || !(c[hf].get<double>() > 0)) refuse(hf, "a number > 0", c[hf]);
      v = c[hf].get<double>();
    }
    r.out.emplace_back(r.a + key, f32(v));
  };
  if (c.contains("sliding_window") && !c["sliding_window"].is_null()) r.count("sliding_window", "attention.sliding_window");
  else r.out.emplace_back(r.a + "attention.sliding_window", u32(2048));
  if (!c.contains("rms_norm_eps")) r.out.emplace_back(r.a + "attention.layer_norm_rms_epsilon", f32(1e-5));
  real_or("output_multiplier", "logit_scale", 0.19611613513818404);
  real_or("qk_scale_factor", "attention.qk_scale", 3.87);
  real_or("post_norm_eps", "attention.post_norm_epsilon", 1e-8);
  if (c.contains("final_logit_softcapping") && c["final_logit_softcapping"].is_null()) return;  // no cap
  real_or("final_logit_softcapping", "final_logit_softcapping", 20.0);
}

}  // namespace

const ArchInfo* hf_config_arch(const Json& config) {
  std::string hf_arch;
  if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
      config["architectures"][0].is_string())
    hf_arch = config["architectures"][0].get<std::string>();
  return find_arch_hf(text(config, "model_type"), hf_arch);
}

MetaList hf_config_meta(const Json& top, const std::string& file, std::map<std::string, std::string>* origin) {
  MetaList out;
  if (!top.is_object()) throw Error(file, "", "config.json is not an object", "{...}", top.dump().substr(0, 40));
  const ArchInfo* arch = hf_config_arch(top);
  // A vision-language release (Qwen3.5 / Qwen3.6) nests the text model's config in text_config.
  Json nested;
  if (arch && (arch->gated_delta || arch->block == "gemma4" || arch->block == "muse_glimmer") && top.contains("text_config") && top["text_config"].is_object()) {
    nested = top["text_config"];
    if (!nested.contains("tie_word_embeddings") && top.contains("tie_word_embeddings")) nested["tie_word_embeddings"] = top["tie_word_embeddings"];
  }
  const Json& c = nested.is_object() ? nested : top;
  const std::string name = arch ? std::string(arch->gguf_name) : text(c, "model_type");
  out.emplace_back("general.architecture", str(name));
  Reader r{c, file, out, name + ".", origin};
  r.from("general.architecture", "model_type");
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
  const char* act_fn = arch->block == "gemma4" ? "gelu_pytorch_tanh" : "silu";  // Gemma: GeGLU (gelu with tanh)
  for (const char* act : {"hidden_act", "hidden_activation"})
    if (arch->block != "nemotron_h" && c.contains(act) && !c[act].is_null() && c[act] != act_fn)
      refuse(act, "\"" + std::string(act_fn) + "\"", c[act]);
  if (c.contains("mlp_bias") && c["mlp_bias"].is_boolean() && c["mlp_bias"].get<bool>()) refuse("mlp_bias", "false", c["mlp_bias"]);
  if (arch->block == "gemma4") {
    gemma4_meta(c, r, refuse);
    rope = nullptr;  // per layer type, read above
  } else if (arch->block == "muse_glimmer") {
    muse_glimmer_meta(c, r, refuse);
  } else if (arch->block == "nemotron_h") {
    nemotron_h_meta(c, file, r.a, out);
    rope = nullptr;  // no position encoding
  } else if (arch->gated_delta) {
    hybrid_meta(c, r, refuse, rope);
  } else if (c.contains("partial_rotary_factor") && c["partial_rotary_factor"].is_number() &&
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
  if (arch->moe != Need::none && arch->block != "gemma4" && arch->block != "nemotron_h") moe_meta(c, r, refuse);
  if (c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean()) {
    out.emplace_back("nvfp4.hf.tie_word_embeddings", boolean(c["tie_word_embeddings"].get<bool>()));
  }
  return out;
}

}  // namespace nvfp4
