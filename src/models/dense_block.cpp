// The dense decoder block of the Llama family (llama, mistral, qwen2, qwen3 in the table):
//   h = x + o(attention(rope(norm_q(q(n1))), rope(norm_k(k(n1))), v(n1))),  n1 = RMSNorm(x)
//   x' = h + down(silu(gate(n2)) * up(n2)),                                  n2 = RMSNorm(h)
// with q/k/v biases (Qwen2; Llama with attention_bias) added to the projections' float outputs,
// and Qwen3's per-head RMSNorm of q and k (weights [head_dim]) before RoPE (OLMoE's over the whole
// q and k). In a mixture-of-experts layer the MLP is moe_ffn (moe_block.cpp). Each step's float
// order is docs/DETERMINISM.md's.
#include "models/blocks.h"
#include "ops/attention.h"

namespace nvfp4 {

void dense_block(StepRun& s, int64_t l) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const LayerWeights& L = s.m.layers[static_cast<size_t>(l)];
  const int64_t n = s.n, d = c.n_embd, qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
  s.rmsnorm(w.x.data(), L.attn_norm, w.xn.data(), n, d);
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.q.bytes + L.k.bytes + L.v.bytes));
    s.run_group({{&L.q, w.q.data()}, {&L.k, w.k.data()}, {&L.v, w.v.data()}}, w.xn.data());
  }
  if (c.qk_norm && c.qk_norm_span == QkNormSpan::full) {  // OLMoE: over each token's whole q and k
    s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), n, qd);
    s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), n, kvd);
  } else if (c.qk_norm) {  // every head of every token is a row of width head_dim
    s.rmsnorm(w.q.data(), L.q_norm, w.q.data(), n * c.n_head, hd);
    s.rmsnorm(w.k.data(), L.k_norm, w.k.data(), n * c.n_head_kv, hd);
  }
  const auto rope_store = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const AttnToken& tk = w.step.tok[static_cast<size_t>(t)];
      w.rope.apply(w.q.data() + t * qd, c.n_head, tk.pos);
      w.rope.apply(w.k.data() + t * kvd, c.n_head_kv, tk.pos);
      tk.kv->store(l, tk.pos, w.k.data() + t * kvd, w.v.data() + t * kvd);
    }
  };
  {
    // Bytes: the keys and values each token reads from its cache (positions 0..pos of this layer).
    double kv_bytes = 0;
    if (w.prof)
      for (const AttnToken& tk : w.step.tok)
        kv_bytes += static_cast<double>(tk.pos + 1) * static_cast<double>(2 * kvd) * (tk.kv->is_f16() ? 2.0 : 4.0);
    PartTimer timer(w.prof, StepProfile::attention, kv_bytes);
    if (n < 16) rope_store(0, n);
    else s.pool.run(n, rope_store);  // tokens are independent (each its own cache position)
    attention(c, w.step, l, w.q.data(), w.att.data(), w.attn_scratch, s.pool);
  }
  {
    PartTimer timer(w.prof, StepProfile::attn_proj, static_cast<double>(L.o.bytes));
    s.run(L.o, w.att.data(), w.o.data());
  }
  s.residual(w.x.data(), w.o.data(), d);
  s.rmsnorm(w.x.data(), L.ffn_norm, w.xn.data(), n, d);
  if (!L.experts.empty()) {
    moe_ffn(s, L, w.xn.data(), w.o.data());
    s.residual(w.x.data(), w.o.data(), d);
    return;
  }
  {
    PartTimer timer(w.prof, StepProfile::mlp, static_cast<double>(L.gate.bytes + L.up.bytes + L.down.bytes));
    // Passes of at most mlp_rows tokens; SwiGLU of each chunk's rows right after its gate and up
    // tiles, in the same dispatch.
    const int64_t ff = c.n_ff, rows = mlp_rows(s.m.mode, n);
    for (int64_t t0 = 0; t0 < n; t0 += rows) {
      StepRun r{s.m, s.ws, s.pool, std::min(rows, n - t0)};
      r.run_group_rows({{&L.gate, w.g.data()}, {&L.up, w.u.data()}}, w.xn.data() + t0 * d, [&](int64_t r0, int64_t r1) {
        for (int64_t t = 0; t < r.n; ++t) swiglu_rows(w.g.data() + t * ff + r0, w.u.data() + t * ff + r0, r1 - r0);
      });
      r.run(L.down, w.g.data(), w.o.data() + t0 * d);
    }
  }
  s.residual(w.x.data(), w.o.data(), d);
}

}  // namespace nvfp4
