#include "io/hf_names.h"

#include <cctype>

namespace nvfp4::hf {

namespace {
const std::pair<const char*, const char*> kFixed[] = {
    {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}};
const std::pair<const char*, const char*> kLayer[] = {
    {"self_attn.q_proj", "attn_q"},  {"self_attn.k_proj", "attn_k"},   {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},   {"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"}};
}  // namespace

std::string to_hf_name(const std::string& g) {
  const auto dot = g.find_last_of('.');
  if (dot == std::string::npos) return g;
  const std::string module = g.substr(0, dot), suffix = g.substr(dot);
  for (const auto& [a, b] : kFixed) if (module == b) return a + suffix;
  if (module.rfind("blk.", 0) != 0) return g;
  size_t k = 4;
  while (k < module.size() && std::isdigit(static_cast<unsigned char>(module[k]))) ++k;
  if (k == 4 || k >= module.size() || module[k] != '.') return g;
  const std::string n = module.substr(4, k - 4), rest = module.substr(k + 1);
  for (const auto& [a, b] : kLayer) if (rest == b) return "model.layers." + n + "." + a + suffix;
  return g;
}

std::string to_gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> fixed[] = {
      {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}};
  static const std::pair<const char*, const char*> layer[] = {
      {"self_attn.q_proj", "attn_q"},     {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},     {"self_attn.o_proj", "attn_output"},
      {"mlp.gate_proj", "ffn_gate"},      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},      {"input_layernorm", "attn_norm"},
      {"post_attention_layernorm", "ffn_norm"}};
  const auto dot = hf.find_last_of('.');
  if (dot == std::string::npos) return hf;
  const std::string module = hf.substr(0, dot), suffix = hf.substr(dot);
  for (const auto& [a, b] : fixed) if (module == a) return b + suffix;
  const std::string prefix = "model.layers.";
  if (module.rfind(prefix, 0) != 0) return hf;
  size_t k = prefix.size();
  while (k < module.size() && std::isdigit(static_cast<unsigned char>(module[k]))) ++k;
  if (k == prefix.size() || k >= module.size() || module[k] != '.') return hf;
  const std::string n = module.substr(prefix.size(), k - prefix.size()), rest = module.substr(k + 1);
  for (const auto& [a, b] : layer) if (rest == a) return "blk." + n + "." + b + suffix;
  return hf;
}

int64_t permuted_source_row(int64_t r, int64_t n_out, int64_t heads) {
  const int64_t hd = n_out / heads, half = hd / 2;
  const int64_t h = r / hd, k = r % hd;  // GGUF row k = 2*j + i
  const int64_t j = k / 2, i = k % 2;
  return h * hd + i * half + j;
}

}  // namespace nvfp4::hf
