// Nemotron-H / Nemotron 3 (entry "nemotron_h"; transformers' modeling_nemotron_h.py): every layer
// is one mixer between an RMSNorm and a residual add, its kind a letter of the layer pattern
// (hybrid_override_pattern, or layers_block_type in transformers 5):
//   M  Mamba-2 (src/models/mamba_layer.cpp, kernels/mamba2.h), a recurrent state per sequence;
//   *  attention without position encoding (no RoPE), grouped-query, a KV cache;
//   -  MLP: down(relu(up(xn))^2), no gate;
//   E  MoE: a sigmoid router with a correction bias (grouped top-k where n_group > 1, weights
//      renormalised and scaled by routed_scaling_factor), squared-ReLU experts, in a latent width
//      between two projections where moe_latent_size says so (LatentMoE), and a squared-ReLU shared
//      expert on the layer's input, added with weight 1 (models/moe_ffn.cpp).
// The MLP and MoE layers keep no sequence state (StateKind::none).
#include "models/families.h"
#include "models/loader.h"

#include <string>
#include <utility>

#include "kernels/mamba2.h"

namespace nvfp4 {

namespace {

MixerKind mixer_of(char ch) {
  return ch == 'M' ? MixerKind::mamba : ch == '*' ? MixerKind::attention : MixerKind::none;
}

void need(const Loader& L, const std::string& name, const char* what) {
  if (!L.ck.find(name)) throw Error(L.path, name, std::string("missing tensor of a ") + what, "present", "absent");
}

}  // namespace

void nemotron_h_configure(Loader& L, const std::string& a, ModelConfig& c) {
  const std::string key = a + "layer_pattern";
  c.pattern = L.meta(key).as_string(key);
  if (static_cast<int64_t>(c.pattern.size()) != c.n_layer)
    throw Error(L.path, key, "one letter per layer (block_count)", std::to_string(c.n_layer) + " letters",
                std::to_string(c.pattern.size()) + " letters");
  c.mixers.clear();
  bool mamba = false, mlp = false, moe = false;
  for (size_t i = 0; i < c.pattern.size(); ++i) {
    const char ch = c.pattern[i];
    if (ch != 'M' && ch != '*' && ch != '-' && ch != 'E')
      throw Error(L.path, key + "[" + std::to_string(i) + "]", "a layer kind: M (Mamba-2), * (attention), - (MLP) or E (MoE)",
                  "M, *, - or E", std::string(1, ch));
    c.mixers.push_back(mixer_of(ch));
    mamba |= ch == 'M';
    mlp |= ch == '-';
    moe |= ch == 'E';
  }
  if (moe && c.n_expert == 0)
    throw Error(L.path, a + "expert_count", "MoE layers (E in the layer pattern) need experts", "present", "absent");
  if (!moe && c.n_expert > 0)
    throw Error(L.path, a + "expert_count", "experts without an MoE layer (no E in the layer pattern)", "absent", "present");
  c.no_rope = true;
  c.n_ff = mlp ? L.meta_int(a + "feed_forward_length") : 0;
  if (moe) {
    c.routed_scale = static_cast<float>(L.meta_float(a + "expert_weights_scale", 1.0));
    if (L.ck.meta(a + "expert_group_count")) c.n_group = L.meta_int(a + "expert_group_count");
    if (L.ck.meta(a + "expert_group_used_count")) c.topk_group = L.meta_int(a + "expert_group_used_count");
    if (c.n_expert % c.n_group != 0 || c.n_expert / c.n_group < 2 || c.topk_group > c.n_group ||
        c.n_expert_used > c.topk_group * (c.n_expert / c.n_group))
      throw Error(L.path, a + "expert_group_count", "expert groups (n_group) of at least 2 experts each, topk_group <= n_group, k in the kept groups",
                  "n_group | expert_count " + std::to_string(c.n_expert), std::to_string(c.n_group) + " groups, " + std::to_string(c.topk_group) + " kept");
    if (L.ck.meta(a + "moe_latent_size")) c.moe_latent = L.meta_int(a + "moe_latent_size");
  }
  if (mamba) {
    MambaConfig& m = c.mamba;
    m.conv_kernel = L.meta_int(a + "ssm.conv_kernel");
    m.d_state = L.meta_int(a + "ssm.state_size");
    m.n_groups = L.meta_int(a + "ssm.group_count");
    m.n_heads = L.meta_int(a + "ssm.time_step_rank");
    const int64_t inner = L.meta_int(a + "ssm.inner_size");
    if (inner % m.n_heads != 0)
      throw Error(L.path, a + "ssm.inner_size", "the Mamba width: a multiple of the heads (ssm.time_step_rank " + std::to_string(m.n_heads) + ")",
                  "a multiple", std::to_string(inner));
    m.head_dim = inner / m.n_heads;
    for (const auto& [k, dst] : {std::pair<const char*, double*>{"ssm.dt_min", &m.dt_min}, {"ssm.dt_max", &m.dt_max}})
      if (const gguf::Value* v = L.ck.meta(a + k)) {
        *dst = v->as_float(a + k);
        if (!(*dst >= 0) || std::isnan(*dst)) throw Error(L.path, a + k, "dt limit (time_step_limit)", ">= 0 (0 for dt_max: none)", std::to_string(*dst));
      }
    if (m.dt_max > 0 && m.dt_max < m.dt_min)
      throw Error(L.path, a + "ssm.dt_max", "time_step_limit [min, max] with min <= max", ">= " + std::to_string(m.dt_min), std::to_string(m.dt_max));
    const Mamba2Shape sh{m.n_heads, m.head_dim, m.d_state, m.n_groups, m.conv_kernel};
    sh.check(L.path.c_str());
  }
}

namespace {

void load_mamba(const Loader& L, const std::string& b, const ModelConfig& c, MambaWeights& w) {
  const MambaConfig& m = c.mamba;
  const Mamba2Shape sh{m.n_heads, m.head_dim, m.d_state, m.n_groups, m.conv_kernel};
  for (const char* t : {"ssm_in.weight", "ssm_out.weight", "ssm_conv1d.weight", "ssm_a_log", "ssm_dt.bias", "ssm_d", "ssm_norm.weight"})
    need(L, b + t, "Mamba-2 layer");
  w.in = L.linear(b + "ssm_in", sh.in_proj_rows(), c.n_embd);
  w.out = L.linear(b + "ssm_out", c.n_embd, sh.inner());
  const std::string conv = b + "ssm_conv1d.weight";  // HF [conv_dim, 1, kernel], GGUF [conv_dim, kernel]
  if (L.ck.find(conv)->shape.size() == 3) L.shaped(conv, {sh.conv_dim(), 1, m.conv_kernel});
  else L.shaped(conv, {sh.conv_dim(), m.conv_kernel});
  w.conv_w = L.ck.to_f32(conv);
  L.ck.release(conv);
  if (L.ck.find(b + "ssm_conv1d.bias")) w.conv_b = L.vec(b + "ssm_conv1d.bias", sh.conv_dim());
  w.A_log = L.vec(b + "ssm_a_log", m.n_heads);
  w.dt_bias = L.vec(b + "ssm_dt.bias", m.n_heads);
  w.D = L.vec(b + "ssm_d", m.n_heads);
  w.norm = L.vec(b + "ssm_norm.weight", sh.inner());
}

void load_moe(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t de = c.moe_latent > 0 ? c.moe_latent : c.n_embd;
  need(L, b + "ffn_gate_inp.weight", "MoE layer (the router)");
  w.router = L.dense(b + "ffn_gate_inp.weight", c.n_expert, c.n_embd);
  need(L, b + "ffn_gate_inp.e_score_correction_bias", "MoE layer (the router's correction bias)");
  w.exp_bias = L.vec(b + "ffn_gate_inp.e_score_correction_bias", c.n_expert);
  for (int64_t x = 0; x < c.n_expert; ++x) {
    Expert ex;
    std::string e = ".";  // (not "." + to_string: GCC 12's -Wrestrict false positive there)
    e += std::to_string(x);
    ex.up = L.linear(b + "ffn_up_exps" + e, c.n_ff_exp, de, true);
    ex.down = L.linear(b + "ffn_down_exps" + e, de, c.n_ff_exp, true);
    w.experts.push_back(std::move(ex));
  }
  if (c.n_ff_shexp > 0) {
    w.sh_up = L.linear(b + "ffn_up_shexp", c.n_ff_shexp, c.n_embd);
    w.sh_down = L.linear(b + "ffn_down_shexp", c.n_embd, c.n_ff_shexp);
  }
  if (c.moe_latent > 0) {
    w.lat_in = L.linear(b + "ffn_latent_in", c.moe_latent, c.n_embd);
    w.lat_out = L.linear(b + "ffn_latent_out", c.n_embd, c.moe_latent);
  }
}

}  // namespace

void nemotron_h_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t l = std::stoll(b.substr(4)) - L.first_block;
  if (l < 0 || l >= static_cast<int64_t>(c.pattern.size())) throw Error(L.path, b, "a layer of the layer pattern", "one of its letters", "none");
  const char kind = c.pattern[static_cast<size_t>(l)];
  w.attn_norm = L.norm(b + "attn_norm.weight", c.n_embd);
  w.ffn = kind == 'E' ? FfnKind::moe : kind == '-' ? FfnKind::dense : FfnKind::none;
  switch (kind) {
    case 'M': load_mamba(L, b, c, w.mamba); break;
    case '*': load_attention(L, b, c, w); break;
    case '-':
      w.up = L.linear(b + "ffn_up", c.n_ff, c.n_embd);
      w.down = L.linear(b + "ffn_down", c.n_embd, c.n_ff);
      break;
    default: load_moe(L, b, c, w); break;
  }
}

void nemotron_h_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  Workspace::Impl& w = s.ws;
  switch (L.mixer) {
    case MixerKind::mamba: build_mamba(s, L, l); return;
    case MixerKind::attention:
      build_qkv(s, L);
      build_attn(s, L, l);
      return;
    default: break;
  }
  // An MLP or MoE layer: its norm is the layer's one norm.
  const int64_t d = s.m.cfg.n_embd;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), s.n, d);
  if (L.ffn == FfnKind::moe) moe_ffn(s, L, w.xn.data(), w.o.data());
  else build_dense_ffn(s, L);
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace nvfp4
