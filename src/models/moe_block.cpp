// The mixture-of-experts FFN (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE in the table), replacing the
// dense block's SwiGLU MLP:
//   l = R n2                                   (router, float32, PinnedDense's pinned order)
//   S = the k largest l (equal logits: the lower expert index first), in that rank order
//   w = gating(l, S)                           (route(): docs/DETERMINISM.md, "Routing")
//   y = sum over j in rank order of w_j * (s_down_e (D_e h_e)),  h_e = silu(s_gate_e (G_e n2)) * (s_up_e (U_e n2))
//   y += sigmoid(g_sh . n2) * shared(n2)       (Qwen2-MoE's shared expert)
// Each expert's tensor scales are applied by its own Linear to its own projection's output.
//
// Tokens are grouped by expert: every active expert runs once per step over the rows of the tokens
// routed to it (gathered, in step order), so its weights are decoded once for all of them. A token's
// result does not depend on which other tokens share the step: the linear layers are exact per row
// in the integer modes, and the sum over a token's experts is taken in its own rank order.
// When the step holds one token, the gate and up projections of all its experts read the same
// input and run as one group: the activation is prepared once and one dispatch covers them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "runtime/pinned_math.h"
#include "runtime/step_impl.h"

namespace nvfp4 {

namespace {

// NaN logits (a broken router) sort as -inf, so the order stays a strict weak order.
float key(float v) { return std::isnan(v) ? -INFINITY : v; }

}  // namespace

void route(const ModelConfig& c, const float* logits, int32_t* sel, float* weight) {
  const int64_t ne = c.n_expert, k = c.n_expert_used;
  int32_t idx[1024];
  std::vector<int32_t> big;
  int32_t* order = idx;
  if (ne > 1024) {
    big.resize(static_cast<size_t>(ne));
    order = big.data();
  }
  std::iota(order, order + ne, 0);
  std::partial_sort(order, order + k, order + ne, [&](int32_t a, int32_t b) {
    const float la = key(logits[a]), lb = key(logits[b]);
    return la > lb || (la == lb && a < b);
  });
  for (int64_t j = 0; j < k; ++j) sel[j] = order[j];
  double p[1024];
  std::vector<double> pbig;
  double* pe = p;
  if (k > 1024) {
    pbig.resize(static_cast<size_t>(k));
    pe = pbig.data();
  }
  if (c.gating == MoeGating::softmax_topk) {
    // softmax over the k selected: exp(l - l_max) in double, summed in rank order.
    const double mx = key(logits[sel[0]]);
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += (pe[j] = pinned::exp(static_cast<double>(key(logits[sel[j]])) - mx));
    for (int64_t j = 0; j < k; ++j) weight[j] = static_cast<float>(pe[j] / sum);
    return;
  }
  // softmax over all n_expert logits: the denominator summed in expert order.
  const double mx = key(logits[sel[0]]);
  double sum = 0.0;
  for (int64_t e = 0; e < ne; ++e) sum += pinned::exp(static_cast<double>(key(logits[e])) - mx);
  double sel_sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sel_sum += (pe[j] = pinned::exp(static_cast<double>(key(logits[sel[j]])) - mx) / sum);
  for (int64_t j = 0; j < k; ++j) weight[j] = static_cast<float>(c.norm_topk ? pe[j] / sel_sum : pe[j]);
}

void moe_ffn(StepRun& s, const LayerWeights& L, const float* xn, float* out) {
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  const int64_t n = s.n, d = c.n_embd, k = c.n_expert_used, ff = c.n_ff_exp;
  const size_t nk = static_cast<size_t>(n * k);
  w.moe_logits.resize(static_cast<size_t>(n * c.n_expert));
  w.moe_sel.resize(nk);
  w.moe_w.resize(nk);
  w.moe_slots.resize(nk * static_cast<size_t>(d));
  L.router.forward(xn, n, w.moe_logits.data(), s.pool);
  const auto route_rows = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      route(c, w.moe_logits.data() + t * c.n_expert, w.moe_sel.data() + t * k, w.moe_w.data() + t * k);
  };
  if (n < 16) route_rows(0, n);
  else s.pool.run(n, route_rows);

  if (n == 1) {
    // One token: gate and up of its k experts as one group over the same input.
    std::vector<const Linear*> lin;
    std::vector<float*> ys;
    bool nvfp4 = true;
    for (int64_t j = 0; j < k; ++j) {
      const Expert& e = L.experts[static_cast<size_t>(w.moe_sel[static_cast<size_t>(j)])];
      nvfp4 = nvfp4 && e.gate.nvfp4 && e.up.nvfp4 && e.gate.bias.empty() && e.up.bias.empty();
      lin.insert(lin.end(), {&e.gate.lin, &e.up.lin});
      ys.insert(ys.end(), {w.g.data() + j * ff, w.u.data() + j * ff});
      if (w.obs) {
        w.obs(e.gate.name, xn, 1, d);
        w.obs(e.up.name, xn, 1, d);
      }
    }
    if (nvfp4) {
      Linear::forward_group(s.m.mode, lin, xn, 1, ys, s.pool, &w.lin);
    } else {
      for (int64_t j = 0; j < k; ++j) {
        const Expert& e = L.experts[static_cast<size_t>(w.moe_sel[static_cast<size_t>(j)])];
        StepRun one{s.m, w, s.pool, 1};
        one.run(e.gate, xn, w.g.data() + j * ff);
        one.run(e.up, xn, w.u.data() + j * ff);
      }
    }
    swiglu_rows(w.g.data(), w.u.data(), k * ff);
    StepRun one{s.m, w, s.pool, 1};
    for (int64_t j = 0; j < k; ++j) {
      const Expert& e = L.experts[static_cast<size_t>(w.moe_sel[static_cast<size_t>(j)])];
      one.run(e.down, w.g.data() + j * ff, w.moe_slots.data() + j * d);
    }
  } else {
    // Group the step's (token, rank) pairs by expert, tokens in step order within each.
    w.moe_count.assign(static_cast<size_t>(c.n_expert) + 1, 0);
    for (size_t i = 0; i < nk; ++i) ++w.moe_count[static_cast<size_t>(w.moe_sel[i]) + 1];
    for (size_t e = 0; e < static_cast<size_t>(c.n_expert); ++e) w.moe_count[e + 1] += w.moe_count[e];
    w.moe_pairs.resize(nk);
    {
      std::vector<int64_t> fill(w.moe_count.begin(), w.moe_count.end() - 1);
      for (size_t i = 0; i < nk; ++i) w.moe_pairs[static_cast<size_t>(fill[static_cast<size_t>(w.moe_sel[i])]++)] = static_cast<int64_t>(i);
    }
    w.moe_x.resize(static_cast<size_t>(n * d));
    w.moe_y.resize(static_cast<size_t>(n * d));
    for (int64_t e = 0; e < c.n_expert; ++e) {
      const int64_t b = w.moe_count[static_cast<size_t>(e)], cnt = w.moe_count[static_cast<size_t>(e) + 1] - b;
      if (cnt == 0) continue;
      for (int64_t r = 0; r < cnt; ++r) {
        const int64_t t = w.moe_pairs[static_cast<size_t>(b + r)] / k;
        std::memcpy(w.moe_x.data() + r * d, xn + t * d, static_cast<size_t>(d) * 4);
      }
      const Expert& ex = L.experts[static_cast<size_t>(e)];
      StepRun se{s.m, w, s.pool, cnt};
      se.run_group({{&ex.gate, w.g.data()}, {&ex.up, w.u.data()}}, w.moe_x.data());
      swiglu_rows(w.g.data(), w.u.data(), cnt * ff);
      se.run(ex.down, w.g.data(), w.moe_y.data());
      for (int64_t r = 0; r < cnt; ++r) {
        const int64_t slot = w.moe_pairs[static_cast<size_t>(b + r)];
        std::memcpy(w.moe_slots.data() + slot * d, w.moe_y.data() + r * d, static_cast<size_t>(d) * 4);
      }
    }
  }
  // Each token's sum over its experts in rank order: out = w_0 y_0, then out += w_j y_j.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    for (int64_t j = 0; j < k; ++j) {
      const float wt = w.moe_w[static_cast<size_t>(t * k + j)];
      const float* y = w.moe_slots.data() + (t * k + j) * d;
      if (j == 0) for (int64_t i = 0; i < d; ++i) o[i] = wt * y[i];
      else for (int64_t i = 0; i < d; ++i) o[i] = o[i] + wt * y[i];
    }
  }
  if (L.sh_gate.n_out == 0) return;
  // The shared expert over every token, weighted by sigmoid(g_sh . n2) (float(1 / (1 + exp(-z)))).
  const int64_t fs = c.n_ff_shexp;
  s.run_group({{&L.sh_gate, w.g.data()}, {&L.sh_up, w.u.data()}}, xn);
  s.pool.run(n * fs, [&](int64_t b, int64_t e) { swiglu_rows(w.g.data() + b, w.u.data() + b, e - b); }, 16);
  w.moe_y.resize(static_cast<size_t>(n * d));
  s.run(L.sh_down, w.g.data(), w.moe_y.data());
  w.moe_logits.resize(static_cast<size_t>(n));
  L.sh_gate_inp.forward(xn, n, w.moe_logits.data(), s.pool);
  for (int64_t t = 0; t < n; ++t) {
    const float g = static_cast<float>(1.0 / (1.0 + pinned::exp(-static_cast<double>(w.moe_logits[static_cast<size_t>(t)]))));
    for (int64_t i = 0; i < d; ++i) out[t * d + i] = out[t * d + i] + g * w.moe_y[static_cast<size_t>(t * d + i)];
  }
}

}  // namespace nvfp4
