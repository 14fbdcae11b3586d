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
// routed to it (in step order), so its weights are decoded once for all of them, and each token's
// row is quantized once for all its experts (Linear::forward_routed); the
// gate/up projections of all active experts are one dispatch (Linear::forward_many) and their
// downs another, the tiles of every expert shared out over the pool, so a hot expert keeps every
// core busy. A token's result does not depend on which other tokens share the step: the linear
// layers are exact per row in the integer modes, and the sum over a token's experts is taken in
// its own rank order. A step of one token runs its k experts' gate/up as one group over the same
// input (Linear::forward_group: the activation is prepared once).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/pinned_math.h"
#include "models/builders.h"
#include "models/expert_store.h"
#include "models/gemma4.h"

namespace nvfp4 {

namespace {

// NaN logits (a broken router) sort as -inf, so the order stays a strict weak order.
float key(float v) { return std::isnan(v) ? -INFINITY : v; }

}  // namespace

namespace {
// MoeGating::sigmoid_bias (Nemotron-H, nvfp4/arch.h): s = float(sigmoid(l)) in double; the choice
// score s + bias in float; a group scores the sum of its two best choices (float); the topk_group
// best groups (equal: the lower index) keep their experts, the others drop out; the k best
// choices (equal: the lower expert index); weights s_j / (sum_j s_j + 1e-20) when renormalised,
// times routed_scale, in double (the sum in rank order) rounded once.
void route_sigmoid(const ModelConfig& c, const float* logits, const float* bias, int32_t* sel, float* weight) {
  const int64_t ne = c.n_expert, k = c.n_expert_used;
  std::vector<float> sc(static_cast<size_t>(ne)), ch(static_cast<size_t>(ne));
  for (int64_t e = 0; e < ne; ++e) {
    sc[static_cast<size_t>(e)] = static_cast<float>(1.0 / (1.0 + pinned::exp(-static_cast<double>(key(logits[e])))));
    ch[static_cast<size_t>(e)] = key(sc[static_cast<size_t>(e)] + (bias ? bias[e] : 0.0f));
  }
  if (c.n_group > 1) {
    const int64_t gs = ne / c.n_group;
    std::vector<float> gscore(static_cast<size_t>(c.n_group));
    for (int64_t g = 0; g < c.n_group; ++g) {
      float a = -INFINITY, b = -INFINITY;  // the two best of the group
      for (int64_t e = g * gs; e < (g + 1) * gs; ++e) {
        const float v = ch[static_cast<size_t>(e)];
        if (v > a) b = a, a = v;
        else if (v > b) b = v;
      }
      gscore[static_cast<size_t>(g)] = a + b;
    }
    std::vector<int32_t> gorder(static_cast<size_t>(c.n_group));
    std::iota(gorder.begin(), gorder.end(), 0);
    std::stable_sort(gorder.begin(), gorder.end(), [&](int32_t x, int32_t y) { return key(gscore[static_cast<size_t>(x)]) > key(gscore[static_cast<size_t>(y)]); });
    for (size_t j = static_cast<size_t>(c.topk_group); j < gorder.size(); ++j)
      for (int64_t e = gorder[j] * gs; e < (gorder[j] + 1) * gs; ++e) ch[static_cast<size_t>(e)] = -INFINITY;
  }
  std::vector<int32_t> order(static_cast<size_t>(ne));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    const float la = ch[static_cast<size_t>(a)], lb = ch[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j) {
    sel[j] = order[static_cast<size_t>(j)];
    sum += static_cast<double>(sc[static_cast<size_t>(sel[j])]);
  }
  for (int64_t j = 0; j < k; ++j) {
    double v = static_cast<double>(sc[static_cast<size_t>(sel[j])]);
    if (c.norm_topk) v /= sum + 1e-20;
    weight[j] = static_cast<float>(v * static_cast<double>(c.routed_scale));
  }
}
}  // namespace

void route(const ModelConfig& c, const float* logits, int32_t* sel, float* weight, const float* bias) {
  if (c.gating == MoeGating::sigmoid_bias) {
    route_sigmoid(c, logits, bias, sel, weight);
    return;
  }
  const int64_t ne = c.n_expert, k = c.n_expert_used;
  std::vector<int32_t> order(static_cast<size_t>(ne));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    const float la = key(logits[a]), lb = key(logits[b]);
    return la > lb || (la == lb && a < b);
  });
  for (int64_t j = 0; j < k; ++j) sel[j] = order[static_cast<size_t>(j)];
  std::vector<double> pe(static_cast<size_t>(k));
  if (c.gating == MoeGating::softmax_topk) {
    // softmax over the k selected: exp(l - l_max) in double, summed in rank order.
    const double mx = key(logits[sel[0]]);
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += (pe[static_cast<size_t>(j)] = pinned::exp(static_cast<double>(key(logits[sel[j]])) - mx));
    for (int64_t j = 0; j < k; ++j) weight[j] = static_cast<float>(pe[static_cast<size_t>(j)] / sum);
    return;
  }
  // softmax over all n_expert logits: the denominator summed in expert order.
  const double mx = key(logits[sel[0]]);
  double sum = 0.0;
  for (int64_t e = 0; e < ne; ++e) sum += pinned::exp(static_cast<double>(key(logits[e])) - mx);
  double sel_sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sel_sum += (pe[static_cast<size_t>(j)] = pinned::exp(static_cast<double>(key(logits[sel[j]])) - mx) / sum);
  for (int64_t j = 0; j < k; ++j) weight[j] = static_cast<float>(c.norm_topk ? pe[static_cast<size_t>(j)] / sel_sum : pe[static_cast<size_t>(j)]);
}

namespace {
// With an expert store, for steps of a few tokens: the next MoE layer's likely experts read while
// this layer computes. Its router is applied to this layer's router input (the residual stream
// moves little from one layer to the next) and each token's top k are queued
// (ExpertStore::prefetch). Only which experts are resident depends on the guess, never a result.
constexpr int64_t kPrefetchTokens = 4;

void prefetch_next(StepRun& s, int64_t layer, const float* x, ExpertStore& store) {
  const std::vector<LayerWeights>& layers = s.m.layers;
  size_t nx = static_cast<size_t>(layer) + 1;
  while (nx < layers.size() && layers[nx].experts.empty()) ++nx;
  if (nx >= layers.size()) return;
  const LayerWeights& N = layers[nx];
  const ModelConfig& c = s.m.cfg;
  const int64_t ne = c.n_expert, k = c.n_expert_used;
  std::vector<float> logits(static_cast<size_t>(s.n * ne)), wt(static_cast<size_t>(k));
  std::vector<int32_t> sel(static_cast<size_t>(k)), ids;
  s.dense(N.router, x, s.n, logits.data());
  for (int64_t t = 0; t < s.n; ++t) {
    route(c, logits.data() + t * ne, sel.data(), wt.data(), N.exp_bias.empty() ? nullptr : N.exp_bias.data());
    for (const int32_t e : sel)
      if (std::find(ids.begin(), ids.end(), e) == ids.end()) ids.push_back(e);
  }
  store.prefetch(static_cast<int64_t>(nx), ids);
}
}  // namespace

void moe_ffn(StepRun& s, const LayerWeights& L, const float* xn_in, float* out_in, const MoeOptions& opt) {
  // The gated experts' activation: SwiGLU, or Gemma 4's GeGLU (gelu with tanh).
  const auto glu = [&](float* g, const float* u, int64_t count) {
    if (!opt.gelu) return swiglu_rows(g, u, count);
    geglu_rows(g, u, count);
  };
  const ModelConfig& c = s.m.cfg;
  Workspace::Impl& w = s.ws;
  // LatentMoE: the experts read and write the latent width; lat_in before them, lat_out after.
  const bool latent = L.lat_in.n_out > 0;
  const bool gated = L.experts[0].gate.n_out > 0;  // SwiGLU experts; else squared ReLU (Nemotron-H)
  const int64_t n = s.n, d = latent ? c.moe_latent : c.n_embd, k = c.n_expert_used, ff = c.n_ff_exp;
  const float* xn = xn_in;
  float* out = out_in;
  if (latent) {
    w.moe_lat.resize(static_cast<size_t>(n * d));
    w.moe_sum.resize(static_cast<size_t>(n * d));
    {
      PartTimer timer(w.prof, StepProfile::experts, static_cast<double>(L.lat_in.bytes));
      s.run(L.lat_in, xn_in, w.moe_lat.data());
    }
    xn = w.moe_lat.data();
    out = w.moe_sum.data();
  }
  const size_t nk = static_cast<size_t>(n * k);
  w.moe_logits.resize(static_cast<size_t>(n * c.n_expert));
  w.moe_sel.resize(nk);
  w.moe_w.resize(nk);
  {
    PartTimer timer(w.prof, StepProfile::router, static_cast<double>(L.router.bytes()));
    s.dense(L.router, opt.router_in ? opt.router_in : xn_in, n, w.moe_logits.data());
    const float* bias = L.exp_bias.empty() ? nullptr : L.exp_bias.data();
    const auto route_rows = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        route(c, w.moe_logits.data() + t * c.n_expert, w.moe_sel.data() + t * k, w.moe_w.data() + t * k, bias);
        if (opt.expert_scale)
          for (int64_t j = 0; j < k; ++j) w.moe_w[static_cast<size_t>(t * k + j)] *= (*opt.expert_scale)[static_cast<size_t>(w.moe_sel[static_cast<size_t>(t * k + j)])];
      }
    };
    if (n < 16) route_rows(0, n);
    else s.parallel(n, route_rows);
  }
  PartTimer timer(w.prof, StepProfile::experts);  // bytes: the active experts', added below

  // Group the step's (token, rank) pairs by expert, tokens in step order within each: pair p of
  // moe_pairs is (token, rank) index t * k + j; expert e holds pairs [moe_count[e], moe_count[e+1]).
  w.moe_count.assign(static_cast<size_t>(c.n_expert) + 1, 0);
  for (size_t i = 0; i < nk; ++i) ++w.moe_count[static_cast<size_t>(w.moe_sel[i]) + 1];
  for (size_t e = 0; e < static_cast<size_t>(c.n_expert); ++e) w.moe_count[e + 1] += w.moe_count[e];
  w.moe_pairs.resize(nk);
  {
    std::vector<int64_t> fill(w.moe_count.begin(), w.moe_count.end() - 1);
    for (size_t i = 0; i < nk; ++i) w.moe_pairs[static_cast<size_t>(fill[static_cast<size_t>(w.moe_sel[i])]++)] = static_cast<int64_t>(i);
  }
  // The active experts (ascending), and whether they are all NVFP4 (the others are not read: a
  // walk over all n_expert experts' records cost 6.6 us a layer at 256 experts, BENCHMARKS 39).
  std::vector<int32_t> active;
  for (int64_t e = 0; e < c.n_expert; ++e)
    if (w.moe_count[static_cast<size_t>(e) + 1] > w.moe_count[static_cast<size_t>(e)]) active.push_back(static_cast<int32_t>(e));
  bool nvfp4 = true;
  for (const int32_t e : active) {
    const Expert& ex = L.experts[static_cast<size_t>(e)];
    nvfp4 = nvfp4 && (!gated || ex.gate.nvfp4) && ex.up.nvfp4 && ex.down.nvfp4;  // (no gate: Nemotron-H)
    if (w.prof) w.prof->bytes[StepProfile::experts] += static_cast<double>(ex.gate.bytes + ex.up.bytes + ex.down.bytes);
  }
  if (w.prof && L.sh_up.n_out > 0)
    w.prof->bytes[StepProfile::experts] += static_cast<double>(L.sh_gate.bytes + L.sh_up.bytes + L.sh_down.bytes + L.sh_gate_inp.bytes());
  w.moe_y.resize(nk * static_cast<size_t>(d));
  w.moe_g.resize(nk * static_cast<size_t>(ff));
  w.moe_u.resize(nk * static_cast<size_t>(ff));
  // Each pair's token: expert e reads the rows moe_tok[moe_count[e] ..] of xn. The float rows are
  // gathered only where something reads them as floats (float experts, an observer); NVFP4
  // experts get them through Linear::forward_routed, which quantizes each token once.
  const bool one = n == 1;
  // One token with no expert store, and a shared expert that is NVFP4 and plain (no observer,
  // pre-scale, bias or output scale) over the experts' own input: its projections join the routed
  // experts' two dispatches (every row is its own forward()'s bits wherever it runs) instead of
  // two more hand-offs of short streams (BENCHMARKS 39); its output lands in moe_y's row nk.
  const int64_t fs = c.n_ff_shexp;
  const auto plain = [](const MatMul& m) { return m.nvfp4 && m.pre_scale.empty() && m.bias.empty() && m.out_scale.empty(); };
  const bool sh_gated = L.sh_gate.n_out > 0;
  const bool merge_sh = one && nvfp4 && !s.m.experts && !w.obs && !latent && L.sh_up.n_out > 0 && plain(L.sh_up) &&
                        plain(L.sh_down) && (!sh_gated || plain(L.sh_gate));
  if (merge_sh) w.moe_y.resize((nk + 1) * static_cast<size_t>(d));
  w.moe_tok.resize(nk);
  for (size_t p = 0; p < nk; ++p) w.moe_tok[p] = w.moe_pairs[p] / k;
  if (!one && (!nvfp4 || w.obs)) w.moe_x.resize(nk * static_cast<size_t>(d));
  if (!one && (!nvfp4 || w.obs))
    for (size_t p = 0; p < nk; ++p)
      std::memcpy(w.moe_x.data() + p * static_cast<size_t>(d), xn + (w.moe_pairs[p] / k) * d, static_cast<size_t>(d) * 4);
  const auto rows_of = [&](int64_t e) { return w.moe_count[static_cast<size_t>(e) + 1] - w.moe_count[static_cast<size_t>(e)]; };
  const auto x_of = [&](int64_t e) { return one ? xn : w.moe_x.data() + w.moe_count[static_cast<size_t>(e)] * d; };
  if (w.obs)
    for (int64_t e = 0; e < c.n_expert; ++e)
      if (rows_of(e) > 0) {
        const Expert& ex = L.experts[static_cast<size_t>(e)];
        if (gated) w.obs(ex.gate.name, x_of(e), rows_of(e), d);
        w.obs(ex.up.name, x_of(e), rows_of(e), d);
      }
  if (nvfp4) {
    // Expert-major: gate and up of every active expert in one dispatch, then SwiGLU, then every
    // down in one dispatch. One token: its k experts' gate/up read the same row, prepared once.
    // With an expert store (LoadOptions::experts_budget) the active experts run in runs: all begun
    // at once when they fit in half its slots, else runs of a quarter, the next run's reads
    // queued before the current one computes; each run pinned from begin to release. Every
    // expert's rows are computed as in one run, so the bits are the same.
    ExpertStore* store = s.m.experts.get();
    const int64_t layer = &L - s.m.layers.data();
    // A step pins at most half the slots (or one token's k, when that is more): the rest keep
    // what other layers and later tokens use most, which the experts streamed through cannot
    // push out (they are used once; the store evicts the least used).
    const int64_t cap = store ? std::max<int64_t>(store->slots() / 2, std::min<int64_t>(k, store->slots())) : 0;
    const bool fits = !store || static_cast<int64_t>(active.size()) <= cap;
    size_t run_len = std::max<size_t>(active.size(), 1);
    if (!fits) run_len = static_cast<size_t>(std::max<int64_t>(cap / 2, 1));
    const bool ahead = !fits && 2 * static_cast<int64_t>(run_len) <= store->slots();  // the next run read under this one
    const auto run_at = [&](size_t r0) { return std::span<const int32_t>(active.data() + r0, std::min(run_len, active.size() - r0)); };
    struct Pins {  // the runs begun and not yet released, released however the block ends
      ExpertStore* st = nullptr;
      int64_t layer = 0;
      std::vector<std::span<const int32_t>> runs;
      ~Pins() {
        for (const auto& r : runs) st->release(layer, r);
      }
    } pins{store, layer, {}};
    const auto begin = [&](std::span<const int32_t> r) {
      store->begin(layer, r);
      pins.runs.push_back(r);
    };
    std::vector<const Linear*> lin;
    std::vector<const float*> xs;
    std::vector<const int64_t*> rows;
    std::vector<int64_t> ns;
    std::vector<float*> ys;
    // When they fit, every active expert is begun at once (all the reads queued), and with reads
    // to wait for they run in quarters, each computed as soon as its experts are in.
    bool all_begun = false;
    if (store && !active.empty()) {
      if (fits) {
        std::vector<uint8_t> queued;
        pins.runs.push_back(active);
        if (store->begin(layer, active, &queued) > 0) {
          run_len = std::max<size_t>(1, (active.size() + 3) / 4);
          // The resident ones first: they compute while the others are read (the order of the
          // runs changes nothing in an expert's rows).
          std::vector<int32_t> order;
          for (size_t i = 0; i < active.size(); ++i) if (!queued[i]) order.push_back(active[i]);
          for (size_t i = 0; i < active.size(); ++i) if (queued[i]) order.push_back(active[i]);
          active = std::move(order);
          pins.runs.back() = active;
        }
        all_begun = true;
      } else {
        begin(run_at(0));
      }
    }
    if (store && n <= kPrefetchTokens && !opt.router_in) prefetch_next(s, layer, xn_in, *store);
    for (size_t r0 = 0; r0 < active.size(); r0 += run_len) {
      const std::span<const int32_t> run = run_at(r0);
      if (store) {
        if (!all_begun && !ahead && r0 > 0) begin(run);
        store->wait(layer, run);
        if (!all_begun && ahead && r0 + run_len < active.size()) begin(run_at(r0 + run_len));
      }
      lin.clear(), rows.clear(), ns.clear(), ys.clear();
      for (const int32_t e : run) {
        const int64_t cnt = rows_of(e), b = w.moe_count[static_cast<size_t>(e)];
        const Expert& ex = L.experts[static_cast<size_t>(e)];
        if (gated) {
          lin.insert(lin.end(), {&ex.gate.lin, &ex.up.lin});
          rows.insert(rows.end(), 2, w.moe_tok.data() + b);
          ns.insert(ns.end(), {cnt, cnt});
          ys.insert(ys.end(), {w.moe_g.data() + b * ff, w.moe_u.data() + b * ff});
        } else {  // up alone, into g
          lin.push_back(&ex.up.lin);
          rows.push_back(w.moe_tok.data() + b);
          ns.push_back(cnt);
          ys.push_back(w.moe_g.data() + b * ff);
        }
      }
      if (merge_sh) {  // (one token: linear_group reads lin and ys only)
        if (sh_gated) lin.push_back(&L.sh_gate.lin), ys.push_back(w.g.data());
        lin.push_back(&L.sh_up.lin), ys.push_back(sh_gated ? w.u.data() : w.g.data());
      }
      if (one) s.linear_group(lin, xn, 1, ys);
      else s.linear_routed(lin, xn, n, rows, ns, ys);
      // The run's experts' pairs, each expert's [moe_count[e], moe_count[e + 1]) (one stretch when
      // the run is in expert order), as one flat range [0, total) of elements.
      std::vector<int64_t> seg0, seg_at;  // each stretch's first element, and its start in the flat range
      int64_t total = 0;
      for (const int32_t e : run) {
        const int64_t b = w.moe_count[static_cast<size_t>(e)] * ff, len = rows_of(e) * ff;
        if (!seg0.empty() && seg0.back() + (total - seg_at.back()) == b) { total += len; continue; }
        seg0.push_back(b), seg_at.push_back(total), total += len;
      }
      seg_at.push_back(total);
      const auto act = [&](int64_t b, int64_t e) {
        size_t i = static_cast<size_t>(std::upper_bound(seg_at.begin(), seg_at.end(), b) - seg_at.begin()) - 1;
        for (; b < e; ++i) {
          const int64_t hi = std::min(e, seg_at[i + 1]), at = seg0[i] + (b - seg_at[i]);
          if (gated) glu(w.moe_g.data() + at, w.moe_u.data() + at, hi - b);
          else relu2_rows(w.moe_g.data() + at, hi - b);
          b = hi;
        }
      };
      if (total < 4096) act(0, total);
      else s.parallel(total, act, 16);
      if (merge_sh) {
        if (sh_gated) swiglu_rows(w.g.data(), w.u.data(), fs);
        else relu2_rows(w.g.data(), fs);
      }
      lin.clear(), xs.clear(), ns.clear(), ys.clear();
      for (const int32_t e : run) {
        const int64_t cnt = rows_of(e), b = w.moe_count[static_cast<size_t>(e)];
        const Expert& ex = L.experts[static_cast<size_t>(e)];
        if (w.obs) w.obs(ex.down.name, w.moe_g.data() + b * ff, cnt, ff);
        lin.push_back(&ex.down.lin);
        xs.push_back(w.moe_g.data() + b * ff);
        ns.push_back(cnt);
        ys.push_back(w.moe_y.data() + b * d);
      }
      if (merge_sh) lin.push_back(&L.sh_down.lin), xs.push_back(w.g.data()), ns.push_back(1), ys.push_back(w.moe_y.data() + nk * d);
      s.linear_many(lin, xs, ns, ys);
      if (store && !all_begun) {  // this run's experts may go
        store->release(layer, run);
        pins.runs.erase(pins.runs.begin());
      }
    }
  } else {
    // Float experts (DenseLinear): one expert at a time over its gathered rows.
    for (int64_t e = 0; e < c.n_expert; ++e) {
      const int64_t cnt = rows_of(e), b = w.moe_count[static_cast<size_t>(e)];
      if (cnt == 0) continue;
      const Expert& ex = L.experts[static_cast<size_t>(e)];
      if (gated) {
        s.linear(ex.gate, x_of(e), cnt, w.moe_g.data() + b * ff);
        s.linear(ex.up, x_of(e), cnt, w.moe_u.data() + b * ff);
        glu(w.moe_g.data() + b * ff, w.moe_u.data() + b * ff, cnt * ff);
      } else {
        s.linear(ex.up, x_of(e), cnt, w.moe_g.data() + b * ff);
        relu2_rows(w.moe_g.data() + b * ff, cnt * ff);
      }
      if (w.obs) w.obs(ex.down.name, w.moe_g.data() + b * ff, cnt, ff);
      s.linear(ex.down, w.moe_g.data() + b * ff, cnt, w.moe_y.data() + b * d);
    }
  }
  // Each (token, rank) pair's row of moe_y (pair moe_pairs[p] is row p).
  std::vector<int64_t> row_of(nk);
  for (size_t p = 0; p < nk; ++p) row_of[static_cast<size_t>(w.moe_pairs[p])] = static_cast<int64_t>(p);
  // Each token's sum over its experts in rank order: out = w_0 y_0, then out += w_j y_j.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    for (int64_t j = 0; j < k; ++j) {
      const float wt = w.moe_w[static_cast<size_t>(t * k + j)];
      const float* y = w.moe_y.data() + row_of[static_cast<size_t>(t * k + j)] * d;
      if (j == 0) for (int64_t i = 0; i < d; ++i) o[i] = wt * y[i];
      else for (int64_t i = 0; i < d; ++i) o[i] = o[i] + wt * y[i];
    }
  }
  if (latent) {
    PartTimer t2(w.prof, StepProfile::experts, static_cast<double>(L.lat_out.bytes));
    s.run(L.lat_out, w.moe_sum.data(), out_in);
  }
  xn = xn_in;
  out = out_in;
  if (L.sh_gate.n_out == 0 && L.sh_up.n_out > 0) {
    // Nemotron-H's shared expert: down(relu(up(n2))^2), added with weight 1.
    const float* shy = w.moe_y.data() + nk * d;  // merged: computed beside the routed experts
    if (!merge_sh) {
      s.run(L.sh_up, xn, w.g.data());
      relu2_rows(w.g.data(), n * fs);
      w.moe_y.resize(static_cast<size_t>(n * c.n_embd));
      s.run(L.sh_down, w.g.data(), w.moe_y.data());
      shy = w.moe_y.data();
    }
    for (int64_t i = 0; i < n * c.n_embd; ++i) out[i] = out[i] + shy[i];
    return;
  }
  if (L.sh_gate.n_out == 0) return;
  // The shared expert over every token, weighted by sigmoid(g_sh . n2) (float(1 / (1 + exp(-z)))).
  const int64_t d_model = c.n_embd;
  const float* shy = w.moe_y.data() + nk * d;  // merged: computed beside the routed experts
  if (!merge_sh) {
    s.run_group_rows({{&L.sh_gate, w.g.data()}, {&L.sh_up, w.u.data()}}, xn, [&](int64_t r0, int64_t r1) {
      for (int64_t t = 0; t < n; ++t) swiglu_rows(w.g.data() + t * fs + r0, w.u.data() + t * fs + r0, r1 - r0);
    });
    w.moe_y.resize(static_cast<size_t>(n * d_model));
    s.run(L.sh_down, w.g.data(), w.moe_y.data());
    shy = w.moe_y.data();
  }
  w.moe_logits.resize(static_cast<size_t>(n));
  s.dense(L.sh_gate_inp, xn, n, w.moe_logits.data());
  for (int64_t t = 0; t < n; ++t) {
    const float g = static_cast<float>(1.0 / (1.0 + pinned::exp(-static_cast<double>(w.moe_logits[static_cast<size_t>(t)]))));
    for (int64_t i = 0; i < d_model; ++i) out[t * d_model + i] = out[t * d_model + i] + g * shy[t * d_model + i];
  }
}

}  // namespace nvfp4
