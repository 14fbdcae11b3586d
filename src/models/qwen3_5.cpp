// Qwen3.5 / Qwen3.6 (entries "qwen3_5", "qwen3_5_moe") and Qwen3-Next ("qwen3_next"): Gated
// DeltaNet hybrids. Every full_attention_interval-th layer is full attention, the others linear
// attention (Gated DeltaNet, src/models/gated_delta_layer.cpp) with a recurrent state per
// sequence (transformers' modeling_qwen3_5.py, modeling_qwen3_next.py):
//   attention: q_proj gives each head's queries and then its output gate (2 * q_dim rows); q and
//     k get a per-head RMSNorm, RoPE over the first rope.dimension_count dimensions (NeoX halves
//     of those: partial_rotary_factor 0.25), attention, att * sigmoid(gate), o_proj;
//   FFN: SwiGLU (qwen3_5), or routed experts renormalised beside a sigmoid-gated shared expert;
//   every RMSNorm but the linear layers' gated one is zero-centred, (1 + w): added at load for an
//   HF file (llama.cpp's GGUF holds them with the 1 added; io/hybrid_layout.h reads its layout).
#include "io/hf_names.h"
#include "kernels/gated_delta.h"
#include "models/families.h"
#include "models/loader.h"

namespace nvfp4 {

void qwen3_5_configure(Loader& L, const std::string& a, ModelConfig& c) {
  c.attn_out_gate = true;
  // HF's zero-centred norms get their 1 here; a GGUF holds them with it (io/hybrid_layout.h reads
  // llama.cpp's layout of these layers as ours).
  if (L.ck.info().container != "gguf") L.norm_offset = 1.0f;
  LinearAttnConfig& g = c.linear;
  g.conv_kernel = L.meta_int(a + "ssm.conv_kernel");
  g.d_k = L.meta_int(a + "ssm.state_size");
  g.n_k_heads = L.meta_int(a + "ssm.group_count");
  g.n_v_heads = L.meta_int(a + "ssm.time_step_rank");
  const int64_t inner = L.meta_int(a + "ssm.inner_size");
  if (inner % g.n_v_heads != 0)
    throw Error(L.path, a + "ssm.inner_size", "the linear layers' value width: a multiple of the value heads (ssm.time_step_rank " +
                                                 std::to_string(g.n_v_heads) + ")", "a multiple", std::to_string(inner));
  g.d_v = inner / g.n_v_heads;
  const GatedDeltaShape shape{g.n_k_heads, g.n_v_heads, g.d_k, g.d_v, g.conv_kernel};
  shape.check(L.path.c_str());
  const int64_t interval = L.meta_int(a + "full_attention_interval");
  c.mixers.clear();
  for (int64_t l = 0; l < c.n_layer; ++l)
    c.mixers.push_back((l + 1) % interval == 0 ? MixerKind::attention : MixerKind::linear_attention);
  // llama.cpp's GGUF says it twice: the recurrent layers one by one as well.
  if (const gguf::Value* r = L.ck.meta(a + "attention.recurrent_layers")) {
    const std::string key = a + "attention.recurrent_layers";
    if (r->type != gguf::ValueType::array || static_cast<int64_t>(r->arr.size()) != c.n_layer)
      throw Error(L.path, key, "one flag per layer", std::to_string(c.n_layer) + " booleans", std::to_string(r->arr.size()) + " values");
    for (int64_t l = 0; l < c.n_layer; ++l)
      if (r->arr.at(static_cast<size_t>(l), key).as_bool(key) != (c.mixers[static_cast<size_t>(l)] == MixerKind::linear_attention))
        throw Error(L.path, key + "[" + std::to_string(l) + "]", "the recurrent layers agree with full_attention_interval " + std::to_string(interval),
                    (l + 1) % interval == 0 ? "false" : "true", (l + 1) % interval == 0 ? "true" : "false");
  }
  if (interval > c.n_layer)
    throw Error(L.path, a + "full_attention_interval", "at least one full-attention layer", "at most block_count " + std::to_string(c.n_layer),
                std::to_string(interval));
}

namespace {

// A tensor a linear layer cannot run without, named on both sides when missing.
void need(const Loader& L, const std::string& name) {
  if (!L.ck.find(name))
    throw Error(L.path, name, "missing tensor of a Gated DeltaNet layer (" + hf::to_hf_name(name) + ")", "present", "absent");
}

// b, a, ba: a few rows; float ones through PinnedDense (the same bits on every ISA).
MatMul small_linear(const Loader& L, const std::string& base, int64_t n_out, int64_t n_in) {
  need(L, base + ".weight");
  if (L.ck.find(base + ".weight")->storage == Storage::nvfp4) return L.linear(base, n_out, n_in);
  MatMul m;
  m.name = base;
  m.n_out = n_out;
  m.n_in = n_in;
  m.use_pinned = true;
  m.pinned = L.dense(base + ".weight", n_out, n_in);
  m.bytes = m.pinned.bytes();
  return m;
}

void load_linear_attn(const Loader& L, const std::string& b, const ModelConfig& c, LinearAttnWeights& w) {
  const LinearAttnConfig& g = c.linear;
  if (c.info->fused_qkvz && L.ck.find(b + "ssm_in.weight")) {  // HF's Qwen3-Next (GGUF: split, as llama.cpp writes it)
    need(L, b + "ssm_in.weight");
    w.qkvz = L.linear(b + "ssm_in", g.conv_dim() + g.value_dim(), c.n_embd);
    w.ba = small_linear(L, b + "ssm_ba", 2 * g.n_v_heads, c.n_embd);
  } else {
    need(L, b + "attn_qkv.weight");
    need(L, b + "attn_gate.weight");
    w.qkv = L.linear(b + "attn_qkv", g.conv_dim(), c.n_embd);
    w.z = L.linear(b + "attn_gate", g.value_dim(), c.n_embd);
    w.b = small_linear(L, b + "ssm_beta", g.n_v_heads, c.n_embd);
    w.a = small_linear(L, b + "ssm_alpha", g.n_v_heads, c.n_embd);
  }
  need(L, b + "ssm_out.weight");
  w.out = L.linear(b + "ssm_out", c.n_embd, g.value_dim());
  // conv1d: HF [conv_dim, 1, kernel], GGUF [conv_dim, kernel].
  const std::string conv = b + "ssm_conv1d.weight";
  need(L, conv);
  const TensorEntry* e = L.ck.find(conv);
  if (e->shape.size() == 3) L.shaped(conv, {g.conv_dim(), 1, g.conv_kernel});
  else L.shaped(conv, {g.conv_dim(), g.conv_kernel});
  w.conv_w = L.ck.to_f32(conv);
  L.ck.release(conv);
  for (const char* n : {"ssm_a_log", "ssm_dt.bias", "ssm_norm.weight"}) need(L, b + n);
  w.A_log = L.vec(b + "ssm_a_log", g.n_v_heads);
  w.dt_bias = L.vec(b + "ssm_dt.bias", g.n_v_heads);
  w.norm = L.vec(b + "ssm_norm.weight", g.d_v);  // the gated norm: w as it is
}

}  // namespace

void qwen3_5_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  w.attn_norm = L.norm(b + "attn_norm.weight", c.n_embd);
  w.ffn_norm = L.norm(b + "ffn_norm.weight", c.n_embd);
  if (w.mixer == MixerKind::attention) load_attention(L, b, c, w);
  else load_linear_attn(L, b, c, w.lin);
  load_ffn(L, b, c, w);
}

void build_qkv_gated(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, qd = c.q_dim(), hd = c.head_dim;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, c.n_embd);
  if (w.qgate.size() < static_cast<size_t>(n * 2 * qd)) w.qgate.resize(static_cast<size_t>(n * 2 * qd));
  if (w.gate_att.size() < static_cast<size_t>(n * qd)) w.gate_att.resize(static_cast<size_t>(n * qd));
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.q.bytes + L.k.bytes + L.v.bytes));
    s.run_group({{&L.q, w.qgate.data()}, {&L.k, w.k.data()}, {&L.v, w.v.data()}}, w.xn.data());
  }
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < c.n_head; ++h) {
      const float* src = w.qgate.data() + t * 2 * qd + h * 2 * hd;
      std::copy_n(src, hd, w.q.data() + t * qd + h * hd);
      std::copy_n(src + hd, hd, w.gate_att.data() + t * qd + h * hd);
    }
}

void qwen3_5_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  if (L.mixer == MixerKind::linear_attention) {
    build_gated_delta(s, L, l);
  } else {
    build_qkv_gated(s, L);
    build_qk_norm_heads(s, L);
    build_attn(s, L, l, s.ws.gate_att.data());
  }
  build_ffn(s, L);
}

}  // namespace nvfp4
