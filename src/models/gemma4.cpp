// Gemma 4, text (entry "gemma4": transformers' modeling_gemma4.py, Gemma4TextModel). A block is
//   h = x + post_attn_norm(o(attention(rope(q_norm(q(n1))), rope(k_norm(k(n1))), v_norm(v(n1))))), n1 = attn_norm(x)
//   x' = (h + post_ffn_norm(down(gelu_tanh(gate(n2)) * up(n2)))) * layer_scalar,            n2 = ffn_norm(h)
// with each layer's own attention (ModelConfig::attn_layers): a sliding layer reads the last
// `sliding_window` positions, with its head_dim, KV heads and RoPE; a global layer reads every
// position with its own (larger) head_dim and KV heads, and on a K=V layer (attention_k_eq_v) no
// v_proj: the values are k_proj's output, v-normed. RoPE is NeoX over the whole head, a layer
// type's first pairs rotated ("default": all; "proportional": int(factor * head_dim / 2) of them at
// theta^(-2i/head_dim)); no rotated pair: no RoPE. The scores are not scaled (q and k are normed),
// the v norm has no weight, every RMSNorm multiplies by w itself (not 1 + w). The embedding is
// scaled by sqrt(hidden) and the logits soft-capped (step.cpp). KV sharing (num_kv_shared_layers):
// the last N layers compute q alone and attend over the keys and values of the last earlier
// layer of their type that has its own (AttnLayerConfig::kv_from), with an MLP twice as wide under
// use_double_wide_mlp. Per-layer embeddings: src/models/gemma4_ple.cpp; the MoE block beside the
// MLP: src/models/gemma4_moe.cpp.
#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "models/families.h"
#include "models/gemma4.h"
#include "models/loader.h"

namespace nvfp4 {

void gemma4_configure(Loader& L, const std::string& a, ModelConfig& c) {
  c.sliding_window = 0;  // a window per layer, not a bound on the context
  const int64_t window = L.meta_int(a + "attention.sliding_window_swa");
  const std::string pkey = a + "attention.sliding_window_pattern";
  const gguf::Value& pat = L.meta(pkey);
  if (pat.type != gguf::ValueType::array || static_cast<int64_t>(pat.arr.size()) != c.n_layer)
    throw Error(L.path, pkey, "one flag per layer (true: sliding)", std::to_string(c.n_layer) + " booleans", std::to_string(pat.arr.size()) + " values");
  const int64_t hd_g = L.meta_int(a + "attention.key_length_global"), kv_g = L.meta_int(a + "attention.head_count_kv_global");
  bool k_eq_v = false;
  if (const gguf::Value* v = L.ck.meta(a + "attention.k_eq_v")) k_eq_v = v->as_bool(a + "attention.k_eq_v");
  for (const auto& [hd, kv, what] : {std::tuple<int64_t, int64_t, const char*>{c.head_dim, c.n_head_kv, "sliding"}, {hd_g, kv_g, "global"}}) {
    if (c.n_head % kv != 0)
      throw Error(L.path, "", std::string("the ") + what + " layers' KV heads", "a divisor of the " + std::to_string(c.n_head) + " heads",
                  std::to_string(kv));
    if (hd % 2 != 0) throw Error(L.path, "", std::string("the ") + what + " layers' head_dim", "even", std::to_string(hd));
  }
  // RoPE per layer type: NeoX pairs of the whole head, the first dims/2 rotated (ModelConfig::ropes).
  int rope_idx[2] = {-1, -1};
  c.ropes.clear();
  for (int t = 0; t < 2; ++t) {
    const std::string sfx = t == 0 ? "_swa" : "_global";
    const int64_t hd = t == 0 ? c.head_dim : hd_g;
    const gguf::Value* dv = L.ck.meta(a + "rope.dimension_count" + sfx);
    const int64_t dims = dv ? dv->as_int(a + "rope.dimension_count" + sfx) : hd;
    if (dims < 0 || dims > hd || dims % 2 != 0)
      throw Error(L.path, "", "metadata '" + a + "rope.dimension_count" + sfx + "'", "even, 0 .. head_dim " + std::to_string(hd), std::to_string(dims));
    if (dims == 0) continue;  // no RoPE on this layer type
    RopeLayerConfig r;
    r.rope.style = RopeStyle::neox;
    r.rope.proportional = true;
    r.rope.theta = L.meta_float(a + (t == 0 ? "rope.freq_base_swa" : "rope.freq_base"), t == 0 ? 10000.0 : 1000000.0);
    r.head_dim = hd;
    r.n_rot = dims;
    rope_idx[t] = static_cast<int>(c.ropes.size());
    c.ropes.push_back(r);
  }
  c.attn_layers.clear();
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const bool sliding = pat.arr.at(static_cast<size_t>(l), pkey).as_bool(pkey);
    AttnLayerConfig al;
    al.head_dim = sliding ? c.head_dim : hd_g;
    al.n_kv = sliding ? c.n_head_kv : kv_g;
    al.window = sliding ? window : 0;
    al.rope = rope_idx[sliding ? 0 : 1];
    al.k_eq_v = !sliding && k_eq_v;
    al.scale = 1.0f;
    c.attn_layers.push_back(al);
  }
  // KV sharing (num_kv_shared_layers, llama.cpp's attention.shared_kv_layers): each of the last N
  // layers reads the keys and values of the last earlier layer of its type that is not shared
  // (transformers' store_full_length_kv), and keeps none of its own.
  int64_t shared = 0;
  if (const gguf::Value* v = L.ck.meta(a + "attention.shared_kv_layers")) shared = v->as_int(a + "attention.shared_kv_layers");
  if (shared < 0 || shared >= c.n_layer)
    throw Error(L.path, "", "metadata '" + a + "attention.shared_kv_layers'", "0 .. " + std::to_string(c.n_layer - 1), std::to_string(shared));
  const int64_t first_shared = c.n_layer - shared;
  for (int64_t l = first_shared; l < c.n_layer; ++l) {
    AttnLayerConfig& al = c.attn_layers[static_cast<size_t>(l)];
    for (int64_t s = first_shared - 1; s >= 0 && al.kv_from < 0; --s)
      if ((c.attn_layers[static_cast<size_t>(s)].window > 0) == (al.window > 0)) al.kv_from = s;
    if (al.kv_from < 0)
      throw Error(L.path, "", "metadata '" + a + "attention.shared_kv_layers': layer " + std::to_string(l) + " shares the KV of an earlier layer of its type",
                  std::string("a ") + (al.window > 0 ? "sliding" : "global") + " layer before layer " + std::to_string(first_shared), "none");
  }
  // use_double_wide_mlp: the KV-shared layers' MLP is twice as wide.
  if (const gguf::Value* v = L.ck.meta(a + "feed_forward_double_wide"); v && v->as_bool(a + "feed_forward_double_wide") && shared > 0)
    c.n_ff_kv_shared = 2 * c.n_ff;
  if (c.n_expert > 0) c.n_ff = L.meta_int(a + "feed_forward_length");  // the dense MLP's (load_moe_config took the experts')
  if (L.ck.meta(a + "embedding_length_per_layer_input")) c.n_embd_per_layer = L.meta_int(a + "embedding_length_per_layer_input");
  c.embd_scale = static_cast<float>(std::sqrt(static_cast<double>(c.n_embd)));  // transformers: float32(hidden ** 0.5)
  c.final_softcap = static_cast<float>(L.meta_float(a + "final_logit_softcapping", 0.0));
}

void gemma4_load_layer(const Loader& L, const std::string& b, const ModelConfig& c, LayerWeights& w) {
  const int64_t l = std::stoll(b.substr(4));  // "blk.N."
  const AttnLayerConfig& A = c.attn_layers[static_cast<size_t>(l)];
  const int64_t d = c.n_embd, qd = c.n_head * A.head_dim, kvd = A.n_kv * A.head_dim;
  w.attn_norm = L.norm(b + "attn_norm.weight", d);
  w.post_attn_norm = L.norm(b + "post_attention_norm.weight", d);
  w.ffn_norm = L.norm(b + "ffn_norm.weight", d);
  w.post_ffn_norm = L.norm(b + "post_ffw_norm.weight", d);
  w.out_scale = L.vec(b + "layer_output_scale.weight", 1)[0];
  if (!std::isfinite(w.out_scale))
    throw Error(L.path, b + "layer_output_scale.weight", "layer scalar", "finite", std::to_string(w.out_scale));
  w.q = L.linear(b + "attn_q", qd, d);
  if (A.kv_from >= 0) {
    // A KV-shared layer: its source's keys and values. k/v projections and norms a checkpoint
    // still holds for it go unread, as transformers ignores them (_keys_to_ignore_on_load_unexpected).
    for (const char* t : {"attn_k.weight", "attn_v.weight", "attn_k_norm.weight"})
      if (L.ck.find(b + t)) L.used.insert(b + t);
  } else {
    w.k = L.linear(b + "attn_k", kvd, d);
    if (A.k_eq_v) L.wanted(b + "attn_v.weight", Need::none);  // K = V: a v_proj would go unread
    else w.v = L.linear(b + "attn_v", kvd, d);
    w.k_norm = L.norm(b + "attn_k_norm.weight", A.head_dim);
    w.v_norm.assign(static_cast<size_t>(A.head_dim), 1.0f);
  }
  w.o = L.linear(b + "attn_output", d, qd);
  w.q_norm = L.norm(b + "attn_q_norm.weight", A.head_dim);
  const int64_t ff = A.kv_from >= 0 && c.n_ff_kv_shared > 0 ? c.n_ff_kv_shared : c.n_ff;
  w.gate = L.linear(b + "ffn_gate", ff, d);
  w.up = L.linear(b + "ffn_up", ff, d);
  w.down = L.linear(b + "ffn_down", d, ff);
  if (c.n_embd_per_layer > 0) gemma4_load_ple_layer(L, b, c, w);
  if (c.n_expert > 0) gemma4_load_moe_layer(L, b, c, w);
}

namespace {

void gemma4_attention(StepRun& s, const LayerWeights& L, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const AttnLayerConfig& A = c.attn_layers[static_cast<size_t>(l)];
  const int64_t n = s.n, hd = A.head_dim, kvd = A.n_kv * hd;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, c.n_embd);
  const bool shared = A.kv_from >= 0;  // reads its source's keys and values: q alone
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.q.bytes + L.k.bytes + L.v.bytes));
    if (shared) {
      s.run(L.q, w.xn.data(), w.q.data());
    } else if (A.k_eq_v) {
      s.run_group({{&L.q, w.q.data()}, {&L.k, w.k.data()}}, w.xn.data());
      std::copy_n(w.k.data(), n * kvd, w.v.data());  // the values: k_proj's output, before its norm
    } else {
      s.run_group({{&L.q, w.q.data()}, {&L.k, w.k.data()}, {&L.v, w.v.data()}}, w.xn.data());
    }
  }
  // Every head of every token a row: q and k normed with their weights, v without.
  s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), n * c.n_head, hd);
  if (!shared) {
    s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), n * A.n_kv, hd);
    s.rmsnorm(w.v.data(), L.v_norm, w.v.data(), n * A.n_kv, hd);
  }
  build_layer_attention(s, l);
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.o.bytes));
    s.run(L.o, w.att.data(), w.o.data());
  }
  s.rmsnorm(w.o.data(), L.post_attn_norm, w.o.data(), n, c.n_embd);
  s.residual(w.x.data(), w.o.data(), c.n_embd);
}

void gemma4_ffn(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd, ff = L.gate.n_out;  // a KV-shared layer's may be double-wide
  s.rmsnorm(w.x.data(), L.ffn_norm, w.xn.data(), n, d);
  {
    PartTimer timer(w.prof, StepProfile::mlp, static_cast<double>(L.gate.bytes + L.up.bytes + L.down.bytes));
    const int64_t rows = mlp_rows(s.m.mode, n);
    for (int64_t t0 = 0; t0 < n; t0 += rows) {
      const StepRun r = s.rows(std::min(rows, n - t0));
      r.run_group_rows({{&L.gate, w.g.data()}, {&L.up, w.u.data()}}, w.xn.data() + t0 * d, [&](int64_t r0, int64_t r1) {
        for (int64_t t = 0; t < r.n; ++t)
          geglu_rows(w.g.data() + t * ff + r0, w.u.data() + t * ff + r0, r1 - r0);
      });
      r.run(L.down, w.g.data(), w.o.data() + t0 * d);
    }
  }
  if (!L.experts.empty()) gemma4_moe(s, L);  // the experts beside the MLP (26B-A4B)
  s.rmsnorm(w.o.data(), L.post_ffn_norm, w.o.data(), n, d);
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace

void gemma4_block(StepRun& s, int64_t l) {
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  if (l == 0 && s.m.cfg.n_embd_per_layer > 0) gemma4_ple_inputs(s);
  gemma4_attention(s, L, l);
  gemma4_ffn(s, L);
  if (s.m.cfg.n_embd_per_layer > 0) gemma4_ple_layer(s, L, l);
  if (L.out_scale != 1.0f) {  // the layer scalar: the whole residual stream, in float
    float* x = s.ws.x.data();
    const float k = L.out_scale;
    s.parallel(s.n * s.m.cfg.n_embd, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) x[i] *= k;
    }, 64);
  }
}

}  // namespace nvfp4
