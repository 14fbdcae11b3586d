// HF <-> GGUF tensor names from the architecture table's name pairs (include/nvfp4/arch.h).
#include "io/hf_names.h"

#include <cctype>
#include <span>

#include "nvfp4/arch.h"

namespace nvfp4::hf {

namespace {

// Splits "<prefix><digits>.<rest>" into (digits, rest); false when `module` is not of that form.
bool split_layer(const std::string& module, const std::string& prefix, std::string& n, std::string& rest) {
  if (module.rfind(prefix, 0) != 0) return false;
  size_t k = prefix.size();
  while (k < module.size() && std::isdigit(static_cast<unsigned char>(module[k]))) ++k;
  if (k == prefix.size() || k >= module.size() || module[k] != '.') return false;
  n = module.substr(prefix.size(), k - prefix.size());
  rest = module.substr(k + 1);
  return true;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

// Of the spellings of one GGUF name, the one of `arch` if it has its own, else the common one.
template <class T>
const T* pick_spelling(std::span<const T> table, std::string_view gguf, std::string_view arch) {
  const T *own = nullptr, *common = nullptr;
  for (const T& t : table) {
    if (t.gguf != gguf) continue;
    if (t.arch.empty()) common = common ? common : &t;
    else if (t.arch == arch) own = own ? own : &t;
  }
  return own ? own : common;
}

// HF expert module ("mlp.experts.7.up_proj") -> GGUF ("ffn_up_exps.7"); empty when not one.
std::string expert_to_gguf(const std::string& rest) {
  for (const ArchExpertTensor& t : expert_tensors()) {
    const std::string_view pat = t.hf;
    const size_t star = pat.find('*');
    const std::string_view pre = pat.substr(0, star), post = pat.substr(star + 1);
    if (rest.size() <= pre.size() + post.size() || rest.compare(0, pre.size(), pre) != 0 ||
        rest.compare(rest.size() - post.size(), post.size(), post) != 0)
      continue;
    const std::string idx = rest.substr(pre.size(), rest.size() - pre.size() - post.size());
    if (all_digits(idx)) return std::string(t.gguf) + "." + idx;
  }
  return {};
}

// GGUF expert module ("ffn_up_exps.7") -> HF in `arch`'s spelling; empty when not one.
std::string expert_to_hf(const std::string& rest, std::string_view arch) {
  const auto dot = rest.find('.');
  if (dot == std::string::npos || !all_digits(std::string_view(rest).substr(dot + 1))) return {};
  const std::string_view stacked = std::string_view(rest).substr(0, dot), idx = std::string_view(rest).substr(dot + 1);
  const ArchExpertTensor* best = pick_spelling(expert_tensors(), stacked, arch);
  if (!best) return {};
  const size_t star = best->hf.find('*');
  return std::string(best->hf.substr(0, star)) + std::string(idx) + std::string(best->hf.substr(star + 1));
}

// Per-layer parameters that are not a module's weight or bias (Gated DeltaNet's A_log and
// dt_bias): the whole name after the layer number on each side.
struct WholeName {
  std::string_view gguf, hf;
};
constexpr WholeName kWhole[] = {{"ssm_a_log", "linear_attn.A_log"}, {"ssm_dt.bias", "linear_attn.dt_bias"},
                                {"layer_output_scale.weight", "layer_scalar"},  // Gemma 4's per-layer output scalar
                                {"ffn_gate_inp_scale.weight", "router.scale"},  // Gemma 4's router input scale
                                {"ffn_gate_exps_scale.weight", "router.per_expert_scale"},
                                // Nemotron-H's Mamba-2 parameters (read only: GGUF -> HF names the Gated DeltaNet's)
                                {"ssm_a_log", "mixer.A_log"}, {"ssm_dt.bias", "mixer.dt_bias"}, {"ssm_d", "mixer.D"}};

// Spellings that belong to their architecture alone in the HF -> GGUF direction: Gemma 4 reuses
// other families' HF names for other tensors (its post_attention_layernorm is not an FFN norm).
bool own_spelling(std::string_view arch) { return arch == "gemma4" || arch == "nemotron_h" || arch == "muse_glimmer"; }

// Maps `name` (module + "." + suffix) from one side of the table to the other. The text model of
// a vision-language release (model.language_model.*) is read as the text model's names.
std::string map_name(const std::string& name_in, bool to_gguf, std::string_view arch) {
  static constexpr std::string_view kVlmText = "model.language_model.", kBackbone = "backbone.";
  const std::string name = to_gguf && name_in.rfind(kVlmText, 0) == 0    ? "model." + name_in.substr(kVlmText.size())
                           : to_gguf && name_in.rfind(kBackbone, 0) == 0 ? "model." + name_in.substr(kBackbone.size())  // Nemotron-H
                                                                         : name_in;
  {
    std::string n, rest;
    if (split_layer(name, to_gguf ? "model.layers." : "blk.", n, rest))
      for (const WholeName& w : kWhole)
        if (rest == (to_gguf ? w.hf : w.gguf))
          return (to_gguf ? "blk." : "model.layers.") + n + "." + std::string(to_gguf ? w.gguf : w.hf);
  }
  const auto dot = name.find_last_of('.');
  if (dot == std::string::npos) return name;
  const std::string module = name.substr(0, dot), suffix = name.substr(dot);
  for (const ArchTensor& t : global_tensors()) {
    const std::string_view from = to_gguf ? t.hf : t.gguf, to = to_gguf ? t.gguf : t.hf;
    if (module == from) return std::string(to) + suffix;
  }
  std::string n, rest;
  if (!split_layer(module, to_gguf ? "model.layers." : "blk.", n, rest)) return name;
  const std::string layer = (to_gguf ? "blk." : "model.layers.") + n + ".";
  if (to_gguf) {
    // The architecture's own spelling first (Gemma 4's post_attention_layernorm is not ffn_norm),
    // then the first other; another entry's own spelling only when the architecture is not known.
    for (const ArchTensor& t : layer_tensors())
      if (rest == t.hf && !arch.empty() && t.arch == arch) return layer + std::string(t.gguf) + suffix;
    for (const ArchTensor& t : layer_tensors())
      if (rest == t.hf && (arch.empty() || t.arch.empty() || !own_spelling(t.arch)))
        return layer + std::string(t.gguf) + suffix;
  } else if (const ArchTensor* t = pick_spelling(layer_tensors(), rest, arch)) {
    return layer + std::string(t->hf) + suffix;
  }
  const std::string e = to_gguf ? expert_to_gguf(rest) : expert_to_hf(rest, arch);
  return e.empty() ? name : layer + e + suffix;
}

}  // namespace

std::string to_hf_name(const std::string& g, std::string_view arch) { return map_name(g, false, arch); }
std::string to_gguf_name(const std::string& hf, std::string_view arch) { return map_name(hf, true, arch); }

bool split_expert_name(const std::string& name, std::string& stacked, int64_t& expert) {
  // blk.N.<x>_exps.E.<suffix>
  const auto last = name.find_last_of('.');
  if (last == std::string::npos || last == 0) return false;
  const auto prev = name.find_last_of('.', last - 1);
  if (prev == std::string::npos) return false;
  const std::string_view idx = std::string_view(name).substr(prev + 1, last - prev - 1);
  const std::string_view module = std::string_view(name).substr(0, prev);
  if (!all_digits(idx) || idx.size() > 9 || module.size() < 5 || module.substr(module.size() - 5) != "_exps") return false;
  stacked = std::string(module) + name.substr(last);
  expert = std::stoll(std::string(idx));
  return true;
}

std::string expert_name(const std::string& stacked, int64_t expert) {
  const auto last = stacked.find_last_of('.');
  return stacked.substr(0, last) + "." + std::to_string(expert) + stacked.substr(last);
}

int64_t permuted_source_row(int64_t r, int64_t n_out, int64_t heads) {
  const int64_t hd = n_out / heads, half = hd / 2;
  const int64_t h = r / hd, k = r % hd;  // GGUF row k = 2*j + i
  const int64_t j = k / 2, i = k % 2;
  return h * hd + i * half + j;
}

}  // namespace nvfp4::hf
