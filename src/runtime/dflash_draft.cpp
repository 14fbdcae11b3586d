// The DFlash proposer (include/nvfp4/dflash_draft.h says what it computes). The context's keys and
// values are computed as the target's steps are observed, in the same matmuls for the whole step
// (a verify step's rejected rows too: their positions are written again when the target runs
// them again), into a KV cache of the drafter's layers; a draft step stores its block's keys
// after the context's (positions P .. P + R - 1, which the next observed step writes over) and
// runs the engine's attention (ops/attention.h) per block row over the key range that row sees:
// a causal row up to itself, a bidirectional one to the block's end, a sliding one from its
// window's start. Drafts are the same bits on every run and thread count, and never change the
// output (the target verifies them).
#include "nvfp4/dflash_draft.h"

#include <algorithm>
#include <cmath>

#include "runtime/dflash_assistant.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "runtime/draft_norm.h"
#include "nvfp4/sampler.h"
#include "kernels/attention_kernels.h"
#include "ops/attention.h"
#include "ops/head.h"
#include "ops/rope.h"

namespace nvfp4 {

struct DflashProposer::State {
  RopeTable rope;
  int64_t n_ctx = 0;
  KvCache kv;  // the drafter's layers: context keys (normed, rotated) and values by position, then a block's
  int64_t valid = 0;  // positions [0, valid) hold the latest observed rows
  LinearScratch scratch;
  std::vector<float> ctx, kv_k, kv_v, h, x, q, kb, vb, att, tmp, g, u, attn_scratch, tapbuf, logits;
};

DflashProposer::DflashProposer(const DflashDrafter& drafter, int64_t n_ctx, KvType kv) : d_(drafter), s_(std::make_unique<State>()) {
  const auto& m = d_.impl();
  if (n_ctx < 1) throw Error(m.dir, "", "--spec dflash: the sequence's positions", "at least 1", std::to_string(n_ctx));
  s_->n_ctx = n_ctx;
  s_->rope.init(m.rope, m.head_dim);
  s_->rope.reserve(n_ctx + m.block);
  s_->kv.init(static_cast<int64_t>(m.layers.size()), m.n_kv, m.head_dim, n_ctx + m.block, kv);
}

DflashProposer::~DflashProposer() = default;

void DflashProposer::reset() {
  s_->valid = 0;
  logits_.clear();
}

void DflashProposer::copy_prefix(const DflashProposer& from, int64_t n) {
  if (&from == this) return;
  const auto& m = d_.impl();
  if (&from.d_ != &d_) throw Error(m.dir, "", "a DFlash prefix copied between proposers", "the same assistant", "another");
  State& s = *s_;
  n = std::max<int64_t>(std::min({n, from.s_->valid, s.n_ctx}), 0);
  for (int64_t l = 0; l < static_cast<int64_t>(m.layers.size()); ++l) s.kv.copy_prefix(l, from.s_->kv, l, n);
  s.valid = n;
}

void DflashProposer::observe(int64_t p0, const float* taps, int64_t n, ThreadPool& pool) {
  const Observed o{this, p0, taps, n};
  observe(std::span<const Observed>(&o, 1), pool);
}

void DflashProposer::observe(std::span<const Observed> parts, ThreadPool& pool) {
  std::vector<Observed> use;
  for (const Observed& o : parts) {
    const State& s = *o.p->s_;
    // A gap (positions between the held ones and p0 never observed): nothing after it is usable.
    if (o.n > 0 && o.p0 >= 0 && o.p0 <= s.valid && o.p0 + o.n <= s.n_ctx) use.push_back(o);
  }
  if (use.empty()) return;
  DflashProposer& lead = *use[0].p;
  const auto& m = lead.d_.impl();
  for (const Observed& o : use)
    if (&o.p->d_ != &lead.d_) throw Error(m.dir, "", "DFlash proposers observed together", "the same assistant", "another");
  State& s = *lead.s_;
  const int64_t d = m.d, kvo = m.n_kv * m.head_dim, hd = m.head_dim, width = static_cast<int64_t>(m.taps.size()) * d;
  int64_t n = 0;
  for (const Observed& o : use) n += o.n;
  // Every part's rows in one matmul of each layer (the weights read once for all of them).
  const float* taps = use[0].taps;
  if (use.size() > 1) {
    s.tapbuf.clear();
    for (const Observed& o : use) s.tapbuf.insert(s.tapbuf.end(), o.taps, o.taps + o.n * width);
    taps = s.tapbuf.data();
  }
  s.ctx.resize(static_cast<size_t>(n * d));
  m.fc.forward(m.mode, taps, n, s.ctx.data(), pool, &s.scratch);
  draft_rmsnorm(s.ctx.data(), m.enc_norm.data(), s.ctx.data(), n, d, m.eps);
  s.kv_k.resize(static_cast<size_t>(n * kvo));
  s.kv_v.resize(static_cast<size_t>(n * kvo));
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const DflashLayer& y = m.layers[l];
    y.k.forward(m.mode, s.ctx.data(), n, s.kv_k.data(), pool, &s.scratch);
    y.v.forward(m.mode, s.ctx.data(), n, s.kv_v.data(), pool, &s.scratch);
    int64_t t = 0;
    for (const Observed& o : use)
      for (int64_t r = 0; r < o.n; ++r, ++t) {
        float* kr = s.kv_k.data() + t * kvo;
        draft_rmsnorm(kr, y.k_norm.data(), kr, m.n_kv, hd, m.eps);
        o.p->s_->rope.apply(kr, m.n_kv, o.p0 + r);
        o.p->s_->kv.store(static_cast<int64_t>(l), o.p0 + r, kr, s.kv_v.data() + t * kvo);
      }
  }
  for (const Observed& o : use) {
    o.p->s_->valid = o.p0 + o.n;
    o.p->evaluated_ += o.n;
  }
}

std::vector<int32_t> DflashProposer::propose(std::span<const int32_t> history, int k, ThreadPool& pool) {
  std::vector<int32_t> out;
  const Ask a{this, history, k, &out};
  propose(std::span<const Ask>(&a, 1), pool);
  return out;
}

void DflashProposer::propose(std::span<const Ask> asks, ThreadPool& pool) {
  // Each ask's block: the anchor, then mask tokens, as the target's raw embedding rows; R rows, the
  // drafts wanted and the anchor (a shorter block than block_size when fewer are wanted, as
  // dflash_generate drafts at a generation's end). The asks' rows go through each layer's matmuls
  // together; each row's norms, RoPE, keys and attention are its own ask's.
  struct Item {
    const Ask* a;
    State* s;
    int64_t P, R, row;  // row: its first row in the batch
  };
  std::vector<Item> items;
  int64_t N = 0;
  for (const Ask& a : asks) {
    a.out->clear();
    State& st = *a.p->s_;
    const int64_t P = static_cast<int64_t>(a.history.size()) - 1;  // context positions: the target's
    if (P < 1 || a.k <= 0 || st.valid < P || P > st.n_ctx) continue;
    const int64_t R = std::min<int64_t>(a.p->d_.impl().block, static_cast<int64_t>(a.k) + 1);
    items.push_back({&a, &st, P, R, N});
    N += R;
  }
  if (items.empty()) return;
  DflashProposer& lead = *items[0].a->p;
  const auto& m = lead.d_.impl();
  for (const Item& it : items)
    if (&it.a->p->d_ != &lead.d_) throw Error(m.dir, "", "DFlash proposers drafting together", "the same assistant", "another");
  State& s = *lead.s_;
  const int64_t d = m.d, hd = m.head_dim, kvo = m.n_kv * hd, qo = m.n_head * hd;
  const Head& embd = m.target->impl().embedding();
  s.h.resize(static_cast<size_t>(N * d));
  for (const Item& it : items) {
    embd.row(it.a->history.back(), s.h.data() + it.row * d);
    for (int64_t i = 1; i < it.R; ++i) embd.row(m.mask_token, s.h.data() + (it.row + i) * d);
  }
  if (m.embed_scale != 1.0f)
    for (float& x : s.h) x *= m.embed_scale;
  s.x.resize(static_cast<size_t>(N * d));
  s.q.resize(static_cast<size_t>(N * qo));
  s.kb.resize(static_cast<size_t>(N * kvo));
  s.vb.resize(static_cast<size_t>(N * kvo));
  s.att.resize(static_cast<size_t>(N * qo));
  s.tmp.resize(static_cast<size_t>(N * d));
  s.g.resize(static_cast<size_t>(N * m.n_ff));
  s.u.resize(static_cast<size_t>(N * m.n_ff));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (const Item& it : items) it.s->valid = it.P;  // the block's keys go where the context would continue
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const DflashLayer& y = m.layers[l];
    draft_rmsnorm(s.h.data(), y.attn_norm.data(), s.x.data(), N, d, m.eps);
    y.q.forward(m.mode, s.x.data(), N, s.q.data(), pool, &s.scratch);
    y.k.forward(m.mode, s.x.data(), N, s.kb.data(), pool, &s.scratch);
    y.v.forward(m.mode, s.x.data(), N, s.vb.data(), pool, &s.scratch);
    // Row i of an ask (position P + i) sees keys [lo, hi]: a causal row up to itself, a
    // bidirectional one to the block's end; a sliding layer only keys within its window of P + i
    // (distance <= window in transformers' layout, < window in z-lab's).
    AttnView view;
    view.layer = static_cast<int64_t>(l);
    view.head_dim = hd;
    view.n_head = m.n_head;
    view.n_kv = m.n_kv;
    view.scale = scale;
    const int64_t reach = y.window > 0 ? (m.inclusive ? y.window : y.window - 1) : 0;
    std::vector<AttnToken> whole;  // the rows that see every key up to theirs (no window), in one step
    std::vector<int64_t> whole_rows;
    for (const Item& it : items) {
      for (int64_t i = 0; i < it.R; ++i) {
        const int64_t r = it.row + i;
        draft_rmsnorm(s.q.data() + r * qo, y.q_norm.data(), s.q.data() + r * qo, m.n_head, hd, m.eps);
        draft_rmsnorm(s.kb.data() + r * kvo, y.k_norm.data(), s.kb.data() + r * kvo, m.n_kv, hd, m.eps);
        it.s->rope.apply(s.q.data() + r * qo, m.n_head, it.P + i);
        it.s->rope.apply(s.kb.data() + r * kvo, m.n_kv, it.P + i);
        it.s->kv.store(static_cast<int64_t>(l), it.P + i, s.kb.data() + r * kvo, s.vb.data() + r * kvo);
      }
      for (int64_t i = 0; i < it.R; ++i) {
        const int64_t qp = it.P + i, r = it.row + i;
        const int64_t hi = y.causal ? qp : (y.window > 0 ? std::min(it.P + it.R - 1, qp + reach) : it.P + it.R - 1);
        const int64_t lo = y.window > 0 ? std::max<int64_t>(0, qp - reach) : 0;
        if (lo == 0 && (whole_rows.empty() || whole_rows.back() + 1 == r)) {
          whole.push_back({&it.s->kv, hi});
          whole_rows.push_back(r);
          continue;
        }
        AttnStep one;
        const AttnToken t{&it.s->kv, hi};
        one.set(std::span<const AttnToken>(&t, 1));
        view.window = lo == 0 ? 0 : hi - lo + 1;
        attention_layer(view, one, s.q.data() + r * qo, s.att.data() + r * qo, s.attn_scratch, pool);
      }
    }
    if (!whole.empty()) {  // rows whole_rows[0] .. in a run: q and att in place
      view.window = 0;
      AttnStep st;
      st.set(whole);
      attention_layer(view, st, s.q.data() + whole_rows[0] * qo, s.att.data() + whole_rows[0] * qo, s.attn_scratch, pool);
    }
    y.o.forward(m.mode, s.att.data(), N, s.tmp.data(), pool, &s.scratch);
    for (int64_t i = 0; i < N * d; ++i) s.h[static_cast<size_t>(i)] += s.tmp[static_cast<size_t>(i)];
    draft_rmsnorm(s.h.data(), y.ffn_norm.data(), s.x.data(), N, d, m.eps);
    y.gate.forward(m.mode, s.x.data(), N, s.g.data(), pool, &s.scratch);
    y.up.forward(m.mode, s.x.data(), N, s.u.data(), pool, &s.scratch);
    swiglu_rows(s.g.data(), s.u.data(), N * m.n_ff);
    y.down.forward(m.mode, s.g.data(), N, s.tmp.data(), pool, &s.scratch);
    for (int64_t i = 0; i < N * d; ++i) s.h[static_cast<size_t>(i)] += s.tmp[static_cast<size_t>(i)];
  }
  // The final norm and the target's head on every ask's rows but its anchor, together.
  int64_t M = 0;
  for (const Item& it : items) {
    draft_rmsnorm(s.h.data() + (it.row + 1) * d, m.norm.data(), s.x.data() + M * d, it.R - 1, d, m.eps);
    M += it.R - 1;
  }
  const Head& head = m.target->impl().head();
  const int64_t nv = m.n_vocab;
  s.logits.resize(static_cast<size_t>(M * nv));
  head.forward(m.mode, s.x.data(), M, s.logits.data(), pool);
  if (m.out_mult != 1.0f || m.softcap > 0.0f)  // z-lab's compute_logits: times output_multiplier, then soft-capped
    for (float& x : s.logits) {
      x *= m.out_mult;
      if (m.softcap > 0.0f) x = std::tanh(x / m.softcap) * m.softcap;
    }
  int64_t at = 0;
  for (const Item& it : items) {
    DflashProposer& p = *it.a->p;
    p.logits_.assign(s.logits.begin() + at * nv, s.logits.begin() + (at + it.R - 1) * nv);
    at += it.R - 1;
    p.evaluated_ += it.R;
    std::vector<int32_t>& out = *it.a->out;
    for (int64_t i = 0; i < it.R - 1; ++i) {
      const float* row = p.logits_.data() + i * nv;
      const int32_t tok = argmax(row, nv);
      if (p.p_min > 0.0f && top_probability(row, nv, tok) < static_cast<double>(p.p_min)) break;
      out.push_back(tok);
    }
    if (static_cast<int>(out.size()) < p.n_min) out.clear();
  }
}

double dflash_acceptance(const DflashDrafter& drafter, std::span<const int32_t> ids, ThreadPool& pool, int64_t* positions) {
  const Model& target = drafter.target();
  const int64_t n = static_cast<int64_t>(ids.size()), d = target.config().n_embd, nv = target.config().n_vocab;
  if (n < 4) throw Error(drafter.impl().dir, "--spec dflash", "the DFlash check's text", "at least 4 tokens", std::to_string(n));
  Sequence seq(target, n);
  Workspace ws(target, n);
  std::vector<StepToken> step;
  for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, true});
  std::vector<float> logits(static_cast<size_t>(n * nv));
  std::vector<float> taps(static_cast<size_t>(n) * drafter.taps().size() * static_cast<size_t>(d));
  forward(target, step, ws, pool, logits.data(), nullptr, LayerTaps{drafter.taps(), taps.data()});
  DflashProposer p(drafter, n);
  p.observe(0, taps.data(), n, pool);
  const int64_t first = std::max<int64_t>(1, n / 2), count = std::min<int64_t>(16, n - 1 - first);
  int64_t agree = 0;
  // Last position first: a draft step writes its block's keys over the context after P, which the
  // earlier positions do not read.
  for (int64_t i = count - 1; i >= 0; --i) {
    const int64_t P = first + i * (n - 1 - first) / count;
    const std::vector<int32_t> draft = p.propose(ids.subspan(0, static_cast<size_t>(P + 1)), 1, pool);
    agree += !draft.empty() && draft[0] == argmax(logits.data() + P * nv, nv);
  }
  if (positions) *positions = count;
  return count > 0 ? static_cast<double>(agree) / static_cast<double>(count) : 0.0;
}

}  // namespace nvfp4
