// Nemotron-H's config.json (transformers' NemotronHConfig) as GGUF keys under "nemotron_h.":
//   the layer pattern: hybrid_override_pattern ("M-M*-E", the checkpoints' spelling) or
//     layers_block_type / layer_types (transformers 5: "linear_attention" (Mamba), "full_attention",
//     "mlp", "moe"; the legacy "mamba" and "attention" too) -> layer_pattern (ours: the letters);
//   conv_kernel (mamba_d_conv) -> ssm.conv_kernel, ssm_state_size -> ssm.state_size, n_groups
//     (mamba_n_groups) -> ssm.group_count, mamba_num_heads -> ssm.time_step_rank, their width
//     mamba_num_heads * mamba_head_dim -> ssm.inner_size, time_step_limit (mamba_dt_limit) ->
//     ssm.dt_min / ssm.dt_max (ours; Infinity: 0, no limit), layer_norm_epsilon ->
//     attention.layer_norm_rms_epsilon;
//   n_routed_experts -> expert_count, num_experts_per_tok -> expert_used_count,
//     moe_intermediate_size -> expert_feed_forward_length, moe_shared_expert_intermediate_size ->
//     expert_shared_feed_forward_length, routed_scaling_factor -> expert_weights_scale,
//     norm_topk_prob -> expert_weights_norm, n_group / topk_group -> expert_group_count /
//     expert_group_used_count, moe_latent_size -> moe_latent_size (only with an E layer);
//   num_nextn_predict_layers > 0 -> nextn_steps, mtp_hybrid_override_pattern (mtp_layers_block_type)
//     -> nextn_layer_pattern (ours: the MTP module's layers, as the layer pattern).
// What the engine does not run is refused naming the key and the value.
#include <cmath>

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
gguf::Value num(double v) {
  gguf::Value g;
  g.type = gguf::ValueType::f32;
  g.f = static_cast<double>(static_cast<float>(v));
  return g;
}
gguf::Value text(const std::string& s) {
  gguf::Value g;
  g.type = gguf::ValueType::string;
  g.s = s;
  return g;
}
// A layer type of layers_block_type (transformers 5's names and the legacy ones) as its letter, '?' when none.
char letter(const std::string& s) {
  return s == "linear_attention" || s == "mamba" ? 'M' : s == "full_attention" || s == "attention" ? '*' : s == "mlp" ? '-' : s == "moe" ? 'E' : '?';
}
}  // namespace

void nemotron_h_meta(const Json& c, const std::string& file, const std::string& a, MetaList& out) {
  const auto refuse = [&](const std::string& key, const std::string& expected, const std::string& found) {
    throw Error(file, "", "config.json '" + key + "' is not supported for nemotron_h", expected, found);
  };
  const auto has = [&](const char* k) { return c.contains(k) && !c[k].is_null(); };
  // A key or its older spelling (NemotronHConfig reads mamba_d_conv as conv_kernel, ...).
  const auto pick = [&](const char* k, const char* old) { return has(k) || !has(old) ? k : old; };
  const auto count = [&](const char* k, bool required) -> int64_t {
    if (!has(k)) {
      if (required) refuse(k, "an integer in 1 .. 2^31", "absent");
      return 0;
    }
    if (!c[k].is_number_integer() || c[k].get<int64_t>() < 1 || c[k].get<int64_t>() > (int64_t{1} << 31))
      refuse(k, "an integer in 1 .. 2^31", c[k].dump());
    return c[k].get<int64_t>();
  };
  const auto put = [&](const std::string& key, int64_t v) { out.emplace_back(a + key, u32(static_cast<uint64_t>(v))); };
  // The layer pattern.
  std::string pattern, key = "hybrid_override_pattern";
  if (has("hybrid_override_pattern")) {
    if (!c[key].is_string()) refuse(key, "a string of M, *, - and E", c[key].dump());
    pattern = c[key].get<std::string>();
    for (size_t i = 0; i < pattern.size(); ++i)
      if (pattern[i] != 'M' && pattern[i] != '*' && pattern[i] != '-' && pattern[i] != 'E')
        refuse(key, "a layer kind per letter: M (Mamba-2), * (attention), - (MLP) or E (MoE)",
               "'" + std::string(1, pattern[i]) + "' at layer " + std::to_string(i));
  } else {
    key = has("layers_block_type") ? "layers_block_type" : "layer_types";
    if (!has(key.c_str()) || !c[key].is_array()) refuse("hybrid_override_pattern", "a layer pattern (or layers_block_type)", "absent");
    for (size_t i = 0; i < c[key].size(); ++i) {
      const Json& t = c[key][i];
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      const char ch = letter(s);
      if (ch == '?') refuse(key + "[" + std::to_string(i) + "]", "\"linear_attention\" (Mamba-2), \"full_attention\", \"mlp\" or \"moe\"", t.dump());
      pattern += ch;
    }
  }
  if (pattern.empty()) refuse(key, "at least one layer", "none");
  // A release's MTP layers (num_nextn_predict_layers steps of mtp_hybrid_override_pattern, or
  // mtp_layers_block_type in transformers 5, which writes its default ["attention", "moe"] even
  // without MTP layers): nextn_steps and nextn_layer_pattern, the letters as above ('?' for a type
  // this engine has no letter for). The module's loader (--spec mtp) checks them; the trunk runs
  // whatever they say.
  if (has("num_nextn_predict_layers") && c["num_nextn_predict_layers"] != 0) {
    const int64_t steps = count("num_nextn_predict_layers", true);
    std::string mtp;
    if (has("mtp_hybrid_override_pattern") && c["mtp_hybrid_override_pattern"].is_string()) {
      mtp = c["mtp_hybrid_override_pattern"].get<std::string>();
    } else if (has("mtp_layers_block_type") && c["mtp_layers_block_type"].is_array()) {
      for (const Json& t : c["mtp_layers_block_type"]) mtp += letter(t.is_string() ? t.get<std::string>() : t.dump());
    } else {
      mtp = "*E";  // transformers' default
    }
    put("nextn_steps", steps);
    out.emplace_back(a + "nextn_layer_pattern", text(mtp));
  }
  if (has("num_hidden_layers")) {
    if (count("num_hidden_layers", true) != static_cast<int64_t>(pattern.size()))
      refuse("num_hidden_layers", "the layer pattern's length " + std::to_string(pattern.size()) + " (" + key + ")", c["num_hidden_layers"].dump());
  } else {
    put("block_count", static_cast<int64_t>(pattern.size()));
  }
  out.emplace_back(a + "layer_pattern", text(pattern));
  // What this engine runs.
  const auto want = [&](const char* k, const Json& v) {
    if (has(k) && c[k] != v) refuse(k, v.dump(), c[k].dump());
  };
  want("mlp_hidden_act", "relu2");
  want("mamba_hidden_act", "silu");
  want("mamba_ssm_cache_dtype", "float32");
  for (const char* k : {"attention_bias", "mlp_bias", "use_bias", "mamba_proj_bias"}) want(k, false);
  if (has("sliding_window")) refuse("sliding_window", "null", c["sliding_window"].dump());
  if (has("layer_norm_epsilon")) {
    if (!c["layer_norm_epsilon"].is_number() || !(c["layer_norm_epsilon"].get<double>() > 0))
      refuse("layer_norm_epsilon", "a number > 0", c["layer_norm_epsilon"].dump());
    out.emplace_back(a + "attention.layer_norm_rms_epsilon", num(c["layer_norm_epsilon"].get<double>()));
  }
  if (pattern.find('M') != std::string::npos) {
    const int64_t kernel = count(pick("conv_kernel", "mamba_d_conv"), true);
    if (kernel < 2 || kernel > 8) refuse(pick("conv_kernel", "mamba_d_conv"), "2 to 8", std::to_string(kernel));
    put("ssm.conv_kernel", kernel);
    put("ssm.state_size", count("ssm_state_size", true));
    const int64_t groups = count(pick("n_groups", "mamba_n_groups"), true), heads = count("mamba_num_heads", true);
    if (heads % groups != 0) refuse("mamba_num_heads", "a multiple of n_groups (" + std::to_string(groups) + ")", std::to_string(heads));
    put("ssm.group_count", groups);
    put("ssm.time_step_rank", heads);
    put("ssm.inner_size", heads * count("mamba_head_dim", true));
    const char* lk = pick("time_step_limit", "mamba_dt_limit");
    if (has(lk)) {
      const Json& lim = c[lk];
      if (!lim.is_array() || lim.size() != 2 || !lim[0].is_number() || !lim[1].is_number() || !(lim[0].get<double>() >= 0) ||
          !(lim[1].get<double>() >= lim[0].get<double>()))
        refuse(lk, "[min, max] with 0 <= min <= max (max may be Infinity)", lim.dump());
      out.emplace_back(a + "ssm.dt_min", num(lim[0].get<double>()));
      out.emplace_back(a + "ssm.dt_max", num(std::isinf(lim[1].get<double>()) ? 0.0 : lim[1].get<double>()));
    }
  }
  if (pattern.find('E') != std::string::npos) {
    put("expert_count", count(pick("n_routed_experts", "num_local_experts"), true));
    put("expert_used_count", count("num_experts_per_tok", true));
    put("expert_feed_forward_length", count("moe_intermediate_size", true));
    const int64_t shared = has("n_shared_experts") ? (c["n_shared_experts"].is_number_integer() ? c["n_shared_experts"].get<int64_t>() : -1) : 1;
    if (shared != 0 && shared != 1) refuse("n_shared_experts", "0 or 1", c["n_shared_experts"].dump());
    if (shared == 1) put("expert_shared_feed_forward_length", count("moe_shared_expert_intermediate_size", true));
    if (has("routed_scaling_factor")) {
      if (!c["routed_scaling_factor"].is_number() || !(c["routed_scaling_factor"].get<double>() > 0))
        refuse("routed_scaling_factor", "a number > 0", c["routed_scaling_factor"].dump());
      out.emplace_back(a + "expert_weights_scale", num(c["routed_scaling_factor"].get<double>()));
    }
    if (has("norm_topk_prob")) {
      if (!c["norm_topk_prob"].is_boolean()) refuse("norm_topk_prob", "true or false", c["norm_topk_prob"].dump());
      gguf::Value b;
      b.type = gguf::ValueType::boolean;
      b.u = c["norm_topk_prob"].get<bool>() ? 1 : 0;
      out.emplace_back(a + "expert_weights_norm", b);
    }
    if (has("n_group")) put("expert_group_count", count("n_group", true));
    if (has("topk_group")) put("expert_group_used_count", count("topk_group", true));
    if (has("moe_latent_size")) put("moe_latent_size", count("moe_latent_size", true));
  }
}

}  // namespace nvfp4
