// The Gemma 4 assistant's proposer (include/nvfp4/gemma4_assistant.h says what it computes). A slot
// keeps the target's hidden states of its last observed step; a draft step runs every ask's row
// through the assistant's matmuls together, each row's attention over its own target sequence's
// caches (the engine's attention: a full layer's keys [0, P - 1], a sliding layer's last window + 1
// of them from its ring), at the one position P its chain keeps. Drafts are the same bits on every
// run and thread count, and never change the output (the target verifies them).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/attention_kernels.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "runtime/draft_norm.h"
#include "nvfp4/sampler.h"
#include "ops/attention.h"
#include "ops/rope.h"
#include "ops/step_impl.h"
#include "runtime/gemma4_assistant.h"

namespace nvfp4 {

struct AssistantProposer::Slot {
  int64_t p0 = 0, n = 0;     // the last observed step's positions
  std::vector<float> hidden;  // their final-normed hidden states [n][backbone]
  std::vector<float> logits;  // the last drafts' logits [steps][n_vocab]
};

struct AssistantProposer::Ropes {
  std::vector<RopeTable> t;
};

AssistantProposer::AssistantProposer(const Gemma4Assistant& a, int slots) : a_(a), ropes_(std::make_unique<Ropes>()) {
  if (slots < 1) throw Error(a.impl().dir, "", "--spec mtp: the assistant's slots", "at least 1", std::to_string(slots));
  for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Slot>());
  const auto& layers = a.impl().layers;
  ropes_->t.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) ropes_->t[l].init(layers[l].rope, layers[l].head_dim, layers[l].n_rot);
}

AssistantProposer::~AssistantProposer() = default;

void AssistantProposer::reset(int slot) {
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  s.p0 = s.n = 0;
  s.hidden.clear();
  s.logits.clear();
}

void AssistantProposer::reset() {
  for (size_t i = 0; i < slots_.size(); ++i) reset(static_cast<int>(i));
}

void AssistantProposer::observe(int slot, int64_t p0, const float* hidden, int64_t n) {
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  if (n <= 0) return;
  const int64_t b = a_.impl().backbone;
  s.p0 = p0;
  s.n = n;
  s.hidden.assign(hidden, hidden + n * b);
}

void AssistantProposer::copy_prefix(int slot, int from, int64_t n) {
  if (slot == from) return;
  const Slot& f = *slots_.at(static_cast<size_t>(from));
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  reset(slot);
  // What the other observed within the prefix (its last step's rows before position n).
  const int64_t keep = std::min(f.n, n - f.p0);
  if (keep <= 0) return;
  const int64_t b = a_.impl().backbone;
  s.p0 = f.p0;
  s.n = keep;
  s.hidden.assign(f.hidden.begin(), f.hidden.begin() + keep * b);
}

const std::vector<float>& AssistantProposer::last_logits(int slot) const { return slots_.at(static_cast<size_t>(slot))->logits; }

std::vector<int32_t> AssistantProposer::propose(std::span<const int32_t> history, int k, const Sequence& seq, ThreadPool& pool) {
  std::vector<int32_t> out;
  const Ask a{0, history, &seq, k, &out};
  propose(std::span<const Ask>(&a, 1), pool);
  return out;
}

void AssistantProposer::propose(std::span<const Ask> asks, ThreadPool& pool) {
  const Gemma4Assistant::Impl& m = a_.impl();
  const Model::Impl& T = m.target->impl();
  struct Item {
    const Ask* a;
    Slot* s;
    int64_t P, limit;
    int32_t tok;
    bool live = true;
  };
  std::vector<Item> items;
  for (const Ask& a : asks) {
    a.out->clear();
    Slot& s = *slots_.at(static_cast<size_t>(a.slot));
    s.logits.clear();
    const int64_t P = static_cast<int64_t>(a.history.size()) - 1;
    // The next verify step carries at most kSlidingSlack - 3 drafts, so that after it (all of them
    // rejected at worst) a sliding layer's ring still holds the window + 1 keys before the new end.
    const int64_t limit = std::min<int64_t>(a.limit, kSlidingSlack - 3);
    if (P < 1 || limit <= 0 || !a.seq || a.seq->pos() < P || P - 1 < s.p0 || P - 1 >= s.p0 + s.n) continue;
    items.push_back({&a, &s, P, limit, a.history.back()});
  }
  const int64_t B = m.backbone, d = m.d, nv = m.n_vocab;
  std::vector<float> h(items.size() * static_cast<size_t>(B));
  for (size_t i = 0; i < items.size(); ++i)
    std::copy_n(items[i].s->hidden.data() + (items[i].P - 1 - items[i].s->p0) * B, B, h.data() + i * static_cast<size_t>(B));
  std::vector<RopeTable>& ropes = ropes_->t;
  int64_t far = 0;
  for (const Item& it : items) far = std::max(far, it.P + 1);
  for (RopeTable& r : ropes) r.reserve(far);  // grows by doubling: nothing to do once it covers P
  LinearScratch scratch;
  std::vector<float> x, hx, xn, q, att, o, g, u, hn, logits, cl, ordered, attn_scratch;
  std::vector<double> top_p;
  for (int64_t step = 0;; ++step) {
    std::vector<Item*> live;
    for (Item& it : items)
      if (it.live && step < it.limit) live.push_back(&it);
    if (live.empty()) break;
    const int64_t N = static_cast<int64_t>(live.size());
    // The input: the target's scaled embedding of the token beside the state it comes from.
    x.assign(static_cast<size_t>(N * 2 * B), 0.0f);
    for (int64_t r = 0; r < N; ++r) {
      float* xr = x.data() + r * 2 * B;
      T.embedding().row(live[static_cast<size_t>(r)]->tok, xr);
      for (int64_t i = 0; i < B; ++i) xr[i] *= m.target_embd_scale;
      const size_t at = static_cast<size_t>(live[static_cast<size_t>(r)] - items.data());
      std::copy_n(h.data() + at * static_cast<size_t>(B), B, xr + B);
    }
    hx.resize(static_cast<size_t>(N * d));
    m.pre.forward(m.mode, x.data(), N, hx.data(), pool, &scratch);
    xn.resize(static_cast<size_t>(N * d));
    o.resize(static_cast<size_t>(N * d));
    g.resize(static_cast<size_t>(N * m.n_ff));
    u.resize(static_cast<size_t>(N * m.n_ff));
    for (size_t l = 0; l < m.layers.size(); ++l) {
      const AssistantLayer& y = m.layers[l];
      const int64_t hd = y.head_dim, qd = m.n_head * hd;
      draft_rmsnorm(hx.data(), y.attn_norm.data(), xn.data(), N, d, m.eps);
      q.resize(static_cast<size_t>(N * qd));
      att.resize(static_cast<size_t>(N * qd));
      y.q.forward(m.mode, xn.data(), N, q.data(), pool, &scratch);
      std::vector<AttnToken> toks;
      for (int64_t r = 0; r < N; ++r) {
        const Item& it = *live[static_cast<size_t>(r)];
        draft_rmsnorm(q.data() + r * qd, y.q_norm.data(), q.data() + r * qd, m.n_head, hd, m.eps);
        ropes[l].apply(q.data() + r * qd, m.n_head, it.P);
        // Keys up to P - 1 (a query "at" P - 1 for the mask): the target's, never one of its own.
        Sequence::Impl& si = const_cast<Sequence&>(*it.a->seq).impl();
        toks.push_back({&si.kv, it.P - 1, si.kv_more.data()});
      }
      AttnView view;
      view.group = T.kv_group[static_cast<size_t>(y.source)];
      view.layer = T.kv_layer[static_cast<size_t>(y.source)];
      view.head_dim = hd;
      view.n_head = m.n_head;
      view.n_kv = y.n_kv;
      view.window = y.window > 0 ? y.window + 1 : 0;
      view.scale = 1.0f;
      AttnStep st;
      st.set(toks);
      attention_layer(view, st, q.data(), att.data(), attn_scratch, pool);
      y.o.forward(m.mode, att.data(), N, o.data(), pool, &scratch);
      draft_rmsnorm(o.data(), y.post_attn_norm.data(), o.data(), N, d, m.eps);
      for (int64_t i = 0; i < N * d; ++i) hx[static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
      draft_rmsnorm(hx.data(), y.ffn_norm.data(), xn.data(), N, d, m.eps);
      y.gate.forward(m.mode, xn.data(), N, g.data(), pool, &scratch);
      y.up.forward(m.mode, xn.data(), N, u.data(), pool, &scratch);
      geglu_rows(g.data(), u.data(), N * m.n_ff);
      y.down.forward(m.mode, g.data(), N, o.data(), pool, &scratch);
      draft_rmsnorm(o.data(), y.post_ffn_norm.data(), o.data(), N, d, m.eps);
      for (int64_t i = 0; i < N * d; ++i) hx[static_cast<size_t>(i)] = (hx[static_cast<size_t>(i)] + o[static_cast<size_t>(i)]) * y.scalar;
    }
    hn.resize(static_cast<size_t>(N * d));
    draft_rmsnorm(hx.data(), m.norm.data(), hn.data(), N, d, m.eps);
    logits.resize(static_cast<size_t>(N * nv));
    if (!m.ordered) {
      m.head.forward(m.mode, hn.data(), N, logits.data(), pool);
    } else {
      // The centroid-masked embedder: the top_k centroids' slices of token_ordering (runs of the
      // head's rows as reordered at load) scored in the pinned order; every other token min(kept) - 1.
      const int64_t nc = m.n_centroids, per = nv / nc;
      cl.resize(static_cast<size_t>(N * nc));
      m.centroids.forward(m.mode, hn.data(), N, cl.data(), pool, &scratch);
      std::vector<int64_t> idx(static_cast<size_t>(nc));
      ordered.resize(static_cast<size_t>(nv));
      top_p.resize(static_cast<size_t>(N));
      for (int64_t r = 0; r < N; ++r) {
        const float* c = cl.data() + r * nc;
        std::iota(idx.begin(), idx.end(), int64_t{0});
        std::partial_sort(idx.begin(), idx.begin() + m.top_k, idx.end(), [&](int64_t a, int64_t b) { return c[a] > c[b] || (c[a] == c[b] && a < b); });
        const float* hr = hn.data() + r * d;
        pool.run(m.top_k, [&](int64_t k0, int64_t k1) {
          for (int64_t k = k0; k < k1; ++k) {
            const int64_t r0 = idx[static_cast<size_t>(k)] * per;
            m.ordered_head.forward_rows(hr, r0, r0 + per, ordered.data());
          }
        }, 1);
        float lo = INFINITY;
        for (int64_t k = 0; k < m.top_k; ++k)
          for (int64_t i = idx[static_cast<size_t>(k)] * per, e = i + per; i < e; ++i) lo = std::min(lo, ordered[static_cast<size_t>(i)]);
        // --draft-p-min over the kept tokens (the masked ones stand for no probability).
        double hi = -INFINITY, sum = 0;
        for (int64_t k = 0; k < m.top_k; ++k)
          for (int64_t i = idx[static_cast<size_t>(k)] * per, e = i + per; i < e; ++i) hi = std::max(hi, static_cast<double>(ordered[static_cast<size_t>(i)]));
        for (int64_t k = 0; k < m.top_k; ++k)
          for (int64_t i = idx[static_cast<size_t>(k)] * per, e = i + per; i < e; ++i) sum += std::exp(static_cast<double>(ordered[static_cast<size_t>(i)]) - hi);
        top_p[static_cast<size_t>(r)] = 1.0 / sum;
        float* lr = logits.data() + r * nv;
        std::fill_n(lr, nv, lo - 1.0f);
        for (int64_t k = 0; k < m.top_k; ++k)
          for (int64_t i = idx[static_cast<size_t>(k)] * per, e = i + per; i < e; ++i) lr[m.order[static_cast<size_t>(i)]] = ordered[static_cast<size_t>(i)];
      }
    }
    // The next step's state: post_projection of the normed output.
    std::vector<float> next(static_cast<size_t>(N * B));
    m.post.forward(m.mode, hn.data(), N, next.data(), pool, &scratch);
    for (int64_t r = 0; r < N; ++r) {
      Item& it = *live[static_cast<size_t>(r)];
      const float* lr = logits.data() + r * nv;
      it.s->logits.insert(it.s->logits.end(), lr, lr + nv);
      const int32_t tok = argmax(lr, nv);
      ++evaluated_;
      const double pr = p_min <= 0.0f ? 1.0 : m.ordered ? top_p[static_cast<size_t>(r)] : top_probability(lr, nv, tok);
      if (pr < static_cast<double>(p_min)) {
        it.live = false;
        continue;
      }
      it.a->out->push_back(tok);
      it.tok = tok;
      const size_t at = static_cast<size_t>(&it - items.data());
      std::copy_n(next.data() + r * B, B, h.data() + at * static_cast<size_t>(B));
    }
  }
  for (const Item& it : items)
    if (static_cast<int>(it.a->out->size()) < n_min) it.a->out->clear();
}

double assistant_acceptance(const Gemma4Assistant& a, std::span<const int32_t> ids, ThreadPool& pool, int64_t* positions) {
  const Model& target = a.target();
  const int64_t n = static_cast<int64_t>(ids.size()), d = target.config().n_embd, nv = target.config().n_vocab;
  if (n < 4) throw Error(a.impl().dir, "--spec mtp", "the assistant check's text", "at least 4 tokens", std::to_string(n));
  const int64_t first = std::max<int64_t>(1, n / 2), count = std::min<int64_t>(16, n - 1 - first);
  Sequence seq(target, n);
  Workspace ws(target, n);
  AssistantProposer p(a);
  std::vector<float> logits(static_cast<size_t>(nv)), hidden(static_cast<size_t>(n * d));
  std::vector<StepToken> step;
  int64_t agree = 0, cur = 0;
  int32_t pending = -1;  // the draft at the position the next step's first row judges
  // Positions ascending: the target holds exactly P positions when the assistant drafts at P (a
  // sliding layer's ring holds the window before its end), the next step's first row judges it.
  for (int64_t i = 0; i <= count; ++i) {
    const int64_t P = i < count ? first + i * (n - 1 - first) / count : cur + 1;
    if (P <= cur) continue;
    step.clear();
    for (int64_t t = cur; t < P; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, t == cur});
    forward(target, step, ws, pool, logits.data(), hidden.data());
    if (pending >= 0) agree += pending == argmax(logits.data(), nv);
    p.observe(cur, hidden.data(), P - cur);
    cur = P;
    if (i == count) break;
    const std::vector<int32_t> draft = p.propose(ids.subspan(0, static_cast<size_t>(P + 1)), 1, seq, pool);
    pending = draft.empty() ? -2 : draft[0];
  }
  if (positions) *positions = count;
  return count > 0 ? static_cast<double>(agree) / static_cast<double>(count) : 0.0;
}

}  // namespace nvfp4
