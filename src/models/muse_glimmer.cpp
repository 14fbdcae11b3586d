// Muse Glimmer, text (entry "muse_glimmer": transformers' modeling_muse_glimmer.py,
// MuseGlimmerTextModel under MuseGlimmerForConditionalGeneration). A block is
//   h  = x + post_attn_norm(o(attention(rope(q_norm(q(n1))), rope(k_norm(k(n1))), v(n1)) * sigmoid(gate(n1)))),  n1 = attn_norm(x)
//   x' = h + post_ffn_norm(down(silu(gate(n2)) * up(n2))),                                                          n2 = ffn_norm(h)
// The four norms are zero-centred ((1 + w) on an HF checkpoint; llama.cpp's GGUF holds the 1), the
// two after the sub-layers with their own eps (post_norm_eps, 1e-8). q and k are RMS-normed per
// head without a weight and q then times qk_scale_factor: a q norm whose weight is that factor and
// a k norm of ones (llama.cpp's GGUF holds them so). Sliding layers (sliding_window) rotate the whole
// head (NeoX pairs, rope_theta); the full layers have no position encoding (NoPE: layer_rope_theta
// 0). The scores are scaled by 1/sqrt(head_dim). The embedding is RMS-normed without a weight; the
// final norm is plain w; the logits are times output_multiplier, then soft-capped (step.cpp).
#include <cmath>
#include <utility>
#include <vector>

#include "models/families.h"
#include "models/loader.h"

namespace nvfp4 {

void muse_glimmer_configure(Loader& L, const std::string& a, ModelConfig& c) {
  const int64_t window = c.sliding_window;  // attention.sliding_window: the sliding layers' window
  c.sliding_window = 0;                     // a window per layer, not a bound on the context
  if (window < 1) throw Error(L.path, a + "attention.sliding_window", "the sliding layers' window", ">= 1", std::to_string(window));
  const std::string pkey = a + "attention.sliding_window_pattern";
  const gguf::Value& pat = L.meta(pkey);
  if (pat.type != gguf::ValueType::array || static_cast<int64_t>(pat.arr.size()) != c.n_layer)
    throw Error(L.path, pkey, "one flag per layer (true: sliding, with RoPE; false: full, NoPE)", std::to_string(c.n_layer) + " booleans",
                pat.type == gguf::ValueType::array ? std::to_string(pat.arr.size()) + " values" : "another type");
  RopeLayerConfig r;
  r.rope = c.rope;
  r.rope.style = RopeStyle::neox;
  r.head_dim = c.head_dim;
  c.ropes.assign(1, r);
  c.attn_layers.clear();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const bool sliding = pat.arr.at(static_cast<size_t>(l), pkey).as_bool(pkey);
    AttnLayerConfig al;
    al.head_dim = c.head_dim;
    al.n_kv = c.n_head_kv;
    al.window = sliding ? window : 0;
    al.rope = sliding ? 0 : -1;
    c.attn_layers.push_back(al);
  }
  c.embd_norm = true;
  c.logit_scale = static_cast<float>(L.meta_float(a + "logit_scale", 1.0));
  c.final_softcap = static_cast<float>(L.meta_float(a + "final_logit_softcapping", 0.0));
  c.post_norm_eps = static_cast<float>(L.meta_float(a + "attention.post_norm_epsilon", 1e-8));
  for (const auto& [v, key] : {std::pair<float, const char*>{c.logit_scale, "logit_scale"}, {c.post_norm_eps, "attention.post_norm_epsilon"}})
    if (!(std::isfinite(v) && v > 0.0f)) throw Error(L.path, a + key, "a finite number > 0", "> 0", std::to_string(v));
  if (!(std::isfinite(c.final_softcap) && c.final_softcap >= 0.0f))
    throw Error(L.path, a + "final_logit_softcapping", "a finite number >= 0 (0: none)", ">= 0", std::to_string(c.final_softcap));
}

void muse_glimmer_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t d = c.n_embd, hd = c.head_dim, qd = c.n_head * hd, kvd = c.n_head_kv * hd;
  const bool hf = L.ck.info().container != "gguf";  // HF's zero-centred norms; llama.cpp's GGUF holds the 1
  const auto norm = [&](const std::string& name) {
    std::vector<float> v = L.vec(name, d);
    if (hf)
      for (float& x : v) x += 1.0f;  // in float, as transformers' (1.0 + w.float())
    return v;
  };
  w.attn_norm = norm(b + "attn_norm.weight");
  w.post_attn_norm = norm(b + "post_attention_norm.weight");
  w.ffn_norm = norm(b + "ffn_norm.weight");
  w.post_ffn_norm = norm(b + "post_ffw_norm.weight");
  w.q = L.linear(b + "attn_q", qd, d);
  w.k = L.linear(b + "attn_k", kvd, d);
  w.v = L.linear(b + "attn_v", kvd, d);
  w.attn_gate = L.linear(b + "attn_gate", qd, d);
  w.o = L.linear(b + "attn_output", d, qd);
  // The q and k norms: llama.cpp's tensors where the file has them, else weightless with q times
  // attention.qk_scale (HF's qk_scale_factor).
  if (L.ck.find(b + "attn_q_norm.weight")) {
    w.q_norm = L.vec(b + "attn_q_norm.weight", hd);
    w.k_norm = L.vec(b + "attn_k_norm.weight", hd);
  } else {
    const std::string key = "muse-glimmer.attention.qk_scale";
    const gguf::Value* s = L.ck.meta(key);
    if (!s) throw Error(L.path, b + "attn_q_norm.weight", "the q norm's weight, or metadata '" + key + "'", "present", "absent");
    const float k = static_cast<float>(s->as_float(key));
    if (!std::isfinite(k)) throw Error(L.path, key, "q's scale after its norm", "finite", std::to_string(k));
    w.q_norm.assign(static_cast<size_t>(hd), k);
    w.k_norm.assign(static_cast<size_t>(hd), 1.0f);
  }
  w.gate = L.linear(b + "ffn_gate", c.n_ff, d);
  w.up = L.linear(b + "ffn_up", c.n_ff, d);
  w.down = L.linear(b + "ffn_down", d, c.n_ff);
}

void muse_glimmer_block(StepRun& s, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd, hd = c.head_dim, qd = c.n_head * hd;
  if (w.gate_att.size() < static_cast<size_t>(n * qd)) w.gate_att.resize(static_cast<size_t>(n * qd));
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, d);
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.q.bytes + L.k.bytes + L.v.bytes + L.attn_gate.bytes));
    s.run_group({{&L.q, w.q.data()}, {&L.k, w.k.data()}, {&L.v, w.v.data()}, {&L.attn_gate, w.gate_att.data()}}, w.xn.data());
  }
  s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), n * c.n_head, hd);  // every head of every token a row
  s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), n * c.n_head_kv, hd);
  build_layer_attention(s, l);
  build_output_gate(s, w.gate_att.data(), qd);
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.o.bytes));
    s.run(L.o, w.att.data(), w.o.data());
  }
  s.rmsnorm(w.o.data(), L.post_attn_norm, w.o.data(), n, d, c.post_norm_eps);
  s.residual(w.x.data(), w.o.data(), d);
  s.rmsnorm(w.x.data(), L.ffn_norm, w.xn.data(), n, d);
  build_dense_ffn(s, L);
  s.rmsnorm(w.o.data(), L.post_ffn_norm, w.o.data(), n, d, c.post_norm_eps);
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace nvfp4
