// The shared pieces of the families' blocks. A Llama-family layer is
//   h = x + o(attention(rope(norm_q(q(n1))), rope(norm_k(k(n1))), v(n1))),  n1 = RMSNorm(x)
//   x' = h + down(silu(gate(n2)) * up(n2)),                                  n2 = RMSNorm(h)
// with q/k/v biases (Qwen2; Llama with attention_bias) added to the projections' float outputs,
// and Qwen3's per-head RMSNorm of q and k (weights [head_dim]) before RoPE (OLMoE's over the whole
// q and k). In a mixture-of-experts layer the MLP is moe_ffn (moe_ffn.cpp). Each step's float
// order is docs/DETERMINISM.md's.
#include "models/builders.h"

#include "kernels/pinned_math.h"
#include "ops/attention.h"

namespace nvfp4 {

void build_qkv(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), s.n, c.n_embd);
  PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.q.bytes + L.k.bytes + L.v.bytes));
  s.run_group({{&L.q, w.q.data()}, {&L.k, w.k.data()}, {&L.v, w.v.data()}}, w.xn.data());
}

void build_qk_norm_heads(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  // every head of every token is a row of width head_dim
  s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), s.n * c.n_head, c.head_dim);
  s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), s.n * c.n_head_kv, c.head_dim);
}

void build_qk_norm_full(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), s.n, c.q_dim());
  s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), s.n, c.kv_dim());
}

void build_attn(StepRun& s, const LayerWeights& L, int64_t l, const float* gate) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, qd = c.q_dim(), kvd = c.kv_dim();
  const int64_t kl = s.m.kv_layer[static_cast<size_t>(l)];  // the layer's place in the KV cache
  const auto rope_store = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const AttnToken& tk = w.step.tok[static_cast<size_t>(t)];
      if (!c.no_rope) {  // (Nemotron-H's attention has no position encoding)
        w.rope.apply(w.q.data() + t * qd, c.n_head, tk.pos);
        w.rope.apply(w.k.data() + t * kvd, c.n_head_kv, tk.pos);
      }
      tk.kv->store(kl, tk.pos, w.k.data() + t * kvd, w.v.data() + t * kvd);
    }
  };
  {
    // Bytes: the keys and values each token reads from its cache (positions 0..pos of this layer).
    double kv_bytes = 0;
    if (w.prof)
      for (const AttnToken& tk : w.step.tok)
        kv_bytes += static_cast<double>(tk.pos + 1) * static_cast<double>(2 * kvd) * static_cast<double>(tk.kv->elem_bytes());
    PartTimer timer(w.prof, StepProfile::attention, kv_bytes);
    if (n < 16) rope_store(0, n);
    else s.parallel(n, rope_store);  // tokens are independent (each its own cache position)
    s.attention(l, w.q.data(), w.att.data());
  }
  if (gate) build_output_gate(s, gate, qd);  // Qwen3.5's output gate
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.o.bytes));
    s.run(L.o, w.att.data(), w.o.data());
  }
  s.residual(w.x.data(), w.o.data(), c.n_embd);
}

void build_dense_ffn(StepRun& s, const LayerWeights& L) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd;
  PartTimer timer(w.prof, StepProfile::mlp, static_cast<double>(L.gate.bytes + L.up.bytes + L.down.bytes));
  if (L.gate.n_out == 0) {  // Nemotron-H: down(relu(up(xn))^2), mlp_rows tokens a pass
    const int64_t ff = c.n_ff, rows = mlp_rows(s.m.mode, n);
    for (int64_t t0 = 0; t0 < n; t0 += rows) {
      const StepRun r = s.rows(std::min(rows, n - t0));
      r.run(L.up, w.xn.data() + t0 * d, w.g.data());
      relu2_rows(w.g.data(), r.n * ff);
      r.run(L.down, w.g.data(), w.o.data() + t0 * d);
    }
    return;
  }
  // Passes of at most mlp_rows tokens; SwiGLU of each chunk's rows right after its gate and up
  // tiles, in the same dispatch.
  const int64_t ff = c.n_ff, rows = mlp_rows(s.m.mode, n);
  for (int64_t t0 = 0; t0 < n; t0 += rows) {
    const StepRun r = s.rows(std::min(rows, n - t0));
    r.run_group_rows({{&L.gate, w.g.data()}, {&L.up, w.u.data()}}, w.xn.data() + t0 * d, [&](int64_t r0, int64_t r1) {
      for (int64_t t = 0; t < r.n; ++t) swiglu_rows(w.g.data() + t * ff + r0, w.u.data() + t * ff + r0, r1 - r0);
    });
    r.run(L.down, w.g.data(), w.o.data() + t0 * d);
  }
}

void build_ffn(StepRun& s, const LayerWeights& L) {
  Workspace::Impl& w = s.ws;
  const int64_t d = s.m.cfg.n_embd;
  s.rmsnorm(w.x.data(), L.ffn_norm, w.xn.data(), s.n, d);
  switch (L.ffn) {
    case FfnKind::moe: moe_ffn(s, L, w.xn.data(), w.o.data()); break;
    case FfnKind::dense: build_dense_ffn(s, L); break;
    case FfnKind::none: return;
  }
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace nvfp4
