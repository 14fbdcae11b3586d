// The operations a block is built from (StepRun, ops/step_impl.h): RMSNorm, a linear layer or a
// group of them on one input, the residual add; and the workspace's activation arena they work in.
// Each step's float order is docs/DETERMINISM.md's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "nvfp4/error.h"
#include "ops/attention.h"
#include "ops/step_impl.h"

namespace nvfp4 {

// ---- Workspace ---------------------------------------------------------------------------------

Workspace::Impl::Impl(const Model::Impl& model, int64_t nb) : m(model), n_batch(nb) {
  const ModelConfig& c = m.cfg;
  // A layer's lives (src/models/builders.cpp, moe_ffn.cpp): xn = norm(x); q, k, v = qkv(xn);
  // k, v go to the cache; att = attention(q); o = wo(att); x += o; xn = norm(x); g, u = gate/up(xn)
  // (or the MoE FFN, which takes g and u for its shared expert, xn in and o out); o = down(g);
  // x += o. xn is dead when att is written and att when xn is; q is dead when o is written; k
  // and v are dead before g and u are written. So the arena holds x, xn|att, q|o, g|k and u|v.
  const int64_t wide = nb * std::max(c.n_embd, c.max_q_dim());
  // The FFN's gate/up rows: the dense MLP (mlp_rows at a time), the experts (one token: k experts
  // side by side) or the shared expert.
  const int64_t mlp = c.n_expert > 0 ? nb : mlp_rows(m.mode, nb);
  const int64_t ff = std::max({mlp * std::max(c.n_ff, c.n_ff_kv_shared), nb * c.n_ff_shexp, c.n_expert_used * c.n_ff_exp, nb * c.max_kv_dim(), nb * c.n_embd_per_layer});
  arena.resize(static_cast<size_t>(nb * c.n_embd + 2 * wide + 2 * ff));
  float* p = arena.data();
  const auto take = [&](int64_t n) {
    const ActBuf b{p, static_cast<size_t>(n)};
    p += n;
    return b;
  };
  x = take(nb * c.n_embd);
  const ActBuf a = take(wide), b = take(wide);
  xn = {a.p, static_cast<size_t>(nb * c.n_embd)};
  att = {a.p, static_cast<size_t>(nb * c.max_q_dim())};
  q = {b.p, static_cast<size_t>(nb * c.max_q_dim())};
  o = {b.p, static_cast<size_t>(nb * c.n_embd)};
  g = take(ff);
  u = take(ff);
  k = {g.p, static_cast<size_t>(nb * c.max_kv_dim())};
  v = {u.p, static_cast<size_t>(nb * c.max_kv_dim())};
  rope.init(c.rope, c.head_dim, c.n_rot);
  ropes.resize(c.ropes.size());
  for (size_t i = 0; i < c.ropes.size(); ++i) ropes[i].init(c.ropes[i].rope, c.ropes[i].head_dim, c.ropes[i].n_rot);
}

const char* StepProfile::name(int part) {
  static constexpr const char* kNames[n_parts] = {"attention projections", "attention", "recurrent (Gated DeltaNet or Mamba-2 layers)", "router", "experts", "mlp", "head"};
  return part >= 0 && part < n_parts ? kNames[part] : "?";
}
// ---- the shared pieces of a block -------------------------------------------------------------

void StepRun::rmsnorm(const float* in, const std::vector<float>& w, float* out, int64_t rows, int64_t d) const {
  rmsnorm(in, w, out, rows, d, m.cfg.rms_eps);
}

void StepRun::rmsnorm(const float* in, const std::vector<float>& w, float* out, int64_t rows, int64_t d, float eps) const {
  const auto run_rows = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* xi = in + t * d;
      double ss = 0.0;
      for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xi[i]) * static_cast<double>(xi[i]);
      const double mean = ss / static_cast<double>(d);
      const float scale = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
      for (int64_t i = 0; i < d; ++i) out[t * d + i] = (xi[i] * scale) * w[static_cast<size_t>(i)];
    }
  };
  // Rows are independent: a prompt window's rows split across the pool (same bits). A few rows,
  // or many short ones (a decode token's per-head q/k norm), are not worth a hand-off.
  if (rows < 16 || rows * d <= 16384) run_rows(0, rows);
  else pool.run(rows, run_rows);
}

namespace {
void add_bias(const MatMul& mm, float* y, int64_t n) {
  if (mm.bias.empty()) return;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < mm.n_out; ++r) y[t * mm.n_out + r] = y[t * mm.n_out + r] + mm.bias[static_cast<size_t>(r)];
}
}  // namespace

const float* StepRun::pre_scaled(const std::vector<float>& s, const float* in, int64_t n_in) const {
  if (s.empty()) return in;
  const size_t need = static_cast<size_t>(n * n_in);
  if (ws.pre.size() < need) ws.pre.resize(need);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < n_in; ++i) ws.pre[static_cast<size_t>(t * n_in + i)] = in[t * n_in + i] * s[static_cast<size_t>(i)];
  return ws.pre.data();
}

void StepRun::run(const MatMul& mm, const float* in, float* out) const {
  if (ws.obs) ws.obs(mm.name, in, n, mm.n_in);
  mm.forward(m.mode, pre_scaled(mm.pre_scale, in, mm.n_in), n, out, pool, &ws.lin);
  add_bias(mm, out, n);
}

void StepRun::run_group(std::initializer_list<std::pair<const MatMul*, float*>> mms, const float* in) const {
  const Linear* lin[4];
  float* ys[4];
  size_t k = 0;
  bool nvfp4 = mms.size() <= 4;
  const std::vector<float>& pre = mms.begin()->first->pre_scale;
  for (const auto& [mm, y] : mms) nvfp4 = nvfp4 && mm->nvfp4 && mm->pre_scale == pre;
  if (!nvfp4) {
    for (const auto& [mm, y] : mms) run(*mm, in, y);
    return;
  }
  for (const auto& [mm, y] : mms) {
    if (ws.obs) ws.obs(mm->name, in, n, mm->n_in);
    lin[k] = &mm->lin;
    ys[k++] = y;
  }
  Linear::forward_group(m.mode, std::span<const Linear* const>(lin, k), pre_scaled(pre, in, mms.begin()->first->n_in), n, std::span<float* const>(ys, k), pool, &ws.lin);
  for (const auto& [mm, y] : mms) add_bias(*mm, y, n);
}

void StepRun::run_group_rows(std::initializer_list<std::pair<const MatMul*, float*>> mms, const float* in,
                             const std::function<void(int64_t, int64_t)>& rows) const {
  const MatMul& first = *mms.begin()->first;
  bool fused = mms.size() <= 4;
  for (const auto& [mm, y] : mms)
    fused = fused && mm->nvfp4 && mm->pre_scale == first.pre_scale && mm->n_out == first.n_out && mm->n_in == first.n_in &&
            mm->bias.empty();
  if (!fused) {
    run_group(mms, in);
    pool.run(first.n_out, rows, 16);
    return;
  }
  const Linear* lin[4];
  float* ys[4];
  size_t k = 0;
  for (const auto& [mm, y] : mms) {
    if (ws.obs) ws.obs(mm->name, in, n, mm->n_in);
    lin[k] = &mm->lin;
    ys[k++] = y;
  }
  Linear::forward_rows(m.mode, std::span<const Linear* const>(lin, k), pre_scaled(first.pre_scale, in, first.n_in), n,
                       std::span<float* const>(ys, k), pool, &ws.lin, rows);
}

void StepRun::residual(float* x, const float* o, int64_t d) const {
  for (int64_t i = 0; i < n * d; ++i) x[i] = x[i] + o[i];
}

void StepRun::parallel(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t align) const {
  pool.run(count, fn, align);
}

void StepRun::attention_layer(const AttnView& v, const float* q, float* out, const AttnStep* part) const {
  nvfp4::attention_layer(v, part ? *part : ws.step, q, out, ws.attn_scratch, pool);
}

void StepRun::attention(int64_t layer, const float* q, float* out) const {
  nvfp4::attention(m.cfg, ws.step, m.kv_layer[static_cast<size_t>(layer)], q, out, ws.attn_scratch, pool);
}

void StepRun::dense(const PinnedDense& d, const float* x, int64_t rows, float* y) const { d.forward(x, rows, y, pool); }

void StepRun::linear(const MatMul& mm, const float* x, int64_t rows, float* y) const {
  mm.forward(m.mode, x, rows, y, pool, &ws.lin);
}

void StepRun::linear_group(std::span<const Linear* const> layers, const float* x, int64_t rows,
                           std::span<float* const> y) const {
  Linear::forward_group(m.mode, layers, x, rows, y, pool, &ws.lin);
}

void StepRun::linear_many(std::span<const Linear* const> layers, std::span<const float* const> xs,
                          std::span<const int64_t> ns, std::span<float* const> ys) const {
  Linear::forward_many(m.mode, layers, xs, ns, ys, pool, &ws.lin);
}

void StepRun::linear_routed(std::span<const Linear* const> layers, const float* x, int64_t rows,
                            std::span<const int64_t* const> sel, std::span<const int64_t> ns,
                            std::span<float* const> ys) const {
  Linear::forward_routed(m.mode, layers, x, rows, sel, ns, ys, pool, &ws.lin);
}

}  // namespace nvfp4
