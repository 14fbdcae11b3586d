#include "nvfp4/mtp_draft.h"

#include <algorithm>
#include <cstring>

#include "nvfp4/codec.h"
#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "nvfp4/sampler.h"
#include "ops/head.h"
#include "ops/model_impl.h"
#include "ops/step_impl.h"

namespace nvfp4 {

namespace {
const Model& module_of(const Model& trunk) {
  if (!trunk.mtp())
    throw Error(trunk.impl().source, "--spec mtp", "a model loaded with its multi-token-prediction (MTP) layers", "an MTP module",
                "none loaded");
  return *trunk.mtp();
}
}  // namespace

struct MtpProposer::Slot {
  Sequence seq;                // the module's entries: exact ones for positions 0 .. seq.pos() - 1
  std::vector<int32_t> held;   // the tokens those entries read: history[0 .. seq.pos()]
  // The trunk's rows of positions h0 .. h0 + rows - 1 as F16 (what a catch-up reads: a prompt
  // cache's reused prefix, another slot's copied one): drafts only, never the output.
  std::vector<uint16_t> hidden;
  int64_t h0 = 0;
  Slot(const Model& m, int64_t n_ctx, KvType kv) : seq(m, n_ctx, kv) {}
};

MtpProposer::MtpProposer(const Model& trunk, int64_t n_ctx, int64_t n_batch, KvType kv, int slots)
    : mtp_(module_of(trunk)),
      ws_(mtp_, std::max<int64_t>({1, std::min(n_batch, n_ctx), static_cast<int64_t>(slots)})),
      d_(trunk.config().n_embd),
      nv_(trunk.config().n_vocab) {
  if (slots < 1) throw Error(trunk.impl().source, "--parallel", "MTP sequences", "at least 1", std::to_string(slots));
  for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Slot>(mtp_, n_ctx, kv));
}

MtpProposer::~MtpProposer() = default;

int64_t MtpProposer::set_draft_vocab(int64_t n) {
  const Head& full = mtp_.impl().head();
  const int64_t nv = mtp_.config().n_vocab;
  n = (n + 63) / 64 * 64;
  if (n <= 0 || n >= std::min(nv, full.n_out())) {
    draft_head_.reset();
    return nv_ = nv;
  }
  try {
    draft_head_ = std::make_shared<const Head>(full.prefix(n));
  } catch (const Error& e) {
    throw Error(mtp_.impl().source, "--draft-vocab", e.rule(), e.expected(), e.found());
  }
  return nv_ = n;
}

void MtpProposer::reset(int slot) {
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  s.seq.truncate(0);
  s.held.clear();
  s.hidden.clear();
  s.h0 = 0;
}

void MtpProposer::reset() {
  for (size_t i = 0; i < slots_.size(); ++i) reset(static_cast<int>(i));
}

void MtpProposer::observe(int slot, int64_t p0, const float* hidden, int64_t n) {
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  const int64_t rows = static_cast<int64_t>(s.hidden.size()) / d_;
  if (rows == 0 || p0 < s.h0 || p0 > s.h0 + rows) {  // a new run of positions (a gap loses the ones between)
    s.hidden.clear();
    s.h0 = p0;
  } else {
    s.hidden.resize(static_cast<size_t>((p0 - s.h0) * d_));  // rows from p0 on were a rejected draft's
  }
  for (int64_t i = 0; i < n * d_; ++i) s.hidden.push_back(float_to_half(hidden[i]));
}

void MtpProposer::copy_prefix(int slot, int from, int64_t n) {
  if (slot == from) return;
  Slot& s = *slots_.at(static_cast<size_t>(slot));
  const Slot& f = *slots_.at(static_cast<size_t>(from));
  // Entry p read the tokens up to p + 1: of the n positions given, n - 1 entries are the donor's.
  const int64_t e = std::min<int64_t>(f.seq.pos(), n - 1);
  reset(slot);
  if (e <= 0) return;
  s.seq.copy_prefix(f.seq, e);
  s.held.assign(f.held.begin(), f.held.begin() + e + 1);
  // The donor's trunk rows of those positions (the same tokens), which the next catch-up reads.
  const int64_t rows = static_cast<int64_t>(f.hidden.size()) / d_;
  if (f.h0 <= e && f.h0 + rows >= n) {
    s.hidden.assign(f.hidden.begin() + (e - f.h0) * d_, f.hidden.begin() + (n - f.h0) * d_);
    s.h0 = e;
  }
}

std::vector<int32_t> MtpProposer::propose(std::span<const int32_t> history, int k, ThreadPool& pool) {
  std::vector<int32_t> out;
  const Ask a{0, history, k, &out};
  propose(std::span<const Ask>(&a, 1), pool);
  return out;
}

void MtpProposer::propose(std::span<const Ask> asks, ThreadPool& pool) {
  struct Item {
    const Ask* ask;
    Slot* s;
    int64_t P, E, k;
    std::vector<float> logits, h;  // its latest row of logits and of the module's output
  };
  std::vector<Item> items;
  for (const Ask& a : asks) {
    a.out->clear();
    Slot& s = *slots_.at(static_cast<size_t>(a.slot));
    const std::span<const int32_t> history = a.history;
    const int64_t P = static_cast<int64_t>(history.size()) - 1;  // trunk positions held
    if (P < 1 || a.limit <= 0) continue;
    // The exact entries: those whose tokens (p and p + 1) still agree with the history.
    const size_t c = static_cast<size_t>(std::mismatch(s.held.begin(), s.held.end(), history.begin(), history.end()).first - s.held.begin());
    s.seq.truncate(std::max<int64_t>(std::min<int64_t>(s.seq.pos(), static_cast<int64_t>(c) - 1), 0));
    // The last entry's logits give the first draft: with nothing new to catch up on, run it again.
    if (s.seq.pos() == P) s.seq.truncate(P - 1);
    s.held.resize(static_cast<size_t>(s.seq.pos()) + (s.seq.pos() > 0 ? 1 : 0));
    const int64_t k = std::min<int64_t>(a.limit, s.seq.n_ctx() - P);
    const int64_t E = s.seq.pos(), rows = static_cast<int64_t>(s.hidden.size()) / d_;
    if (k <= 0 || E < s.h0 || P > s.h0 + rows) continue;  // not observed: no draft this time
    items.push_back({&a, &s, P, E, k, {}, {}});
  }
  if (items.empty()) return;
  const int64_t nb = ws_.n_batch();
  std::vector<StepToken> step;
  std::vector<Item*> row_item;  // the item of each logits row of a step
  const auto run = [&](const std::vector<Item*>& last_of) {
    const int64_t n = static_cast<int64_t>(step.size());
    if (logits_.size() < row_item.size() * static_cast<size_t>(nv_)) logits_.resize(row_item.size() * static_cast<size_t>(nv_));
    if (out_.size() < static_cast<size_t>(n * d_)) out_.resize(static_cast<size_t>(n * d_));
    if (!draft_head_) {
      forward_mtp(mtp_, step, h_in_.data(), ws_, pool, logits_.data(), out_.data());
    } else {  // the module's output rows, then the draft vocabulary's head on those that draft
      forward_mtp(mtp_, step, h_in_.data(), ws_, pool, nullptr, out_.data());
      rows_.clear();
      for (int64_t t = 0; t < n; ++t)
        if (step[static_cast<size_t>(t)].logits) rows_.insert(rows_.end(), out_.begin() + t * d_, out_.begin() + (t + 1) * d_);
      const int64_t r = static_cast<int64_t>(rows_.size()) / d_;
      draft_head_->forward(mtp_.impl().mode, rows_.data(), r, logits_.data(), pool);
      finish_logits(mtp_.config(), logits_.data(), r * nv_);
    }
    evaluated_ += n;
    for (size_t r = 0; r < row_item.size(); ++r)
      row_item[r]->logits.assign(logits_.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(nv_)),
                                 logits_.begin() + static_cast<std::ptrdiff_t>((r + 1) * static_cast<size_t>(nv_)));
    for (int64_t t = 0; t < n; ++t)
      if (last_of[static_cast<size_t>(t)]) last_of[static_cast<size_t>(t)]->h.assign(out_.begin() + t * d_, out_.begin() + (t + 1) * d_);
  };
  // Catch up, every slot in the same steps: entry p reads the trunk's row of p and token p + 1.
  std::vector<Item*> last_of;
  const auto flush = [&] {
    if (!step.empty()) run(last_of);
    step.clear();
    row_item.clear();
    last_of.clear();
    h_in_.clear();
  };
  for (Item& it : items) {
    Slot& s = *it.s;
    for (int64_t p = it.E; p < it.P; ++p) {
      if (static_cast<int64_t>(step.size()) == nb) flush();
      const bool last = p + 1 == it.P;
      step.push_back({it.ask->history[static_cast<size_t>(p + 1)], &s.seq, p, last});
      for (int64_t i = (p - s.h0) * d_; i < (p - s.h0 + 1) * d_; ++i) h_in_.push_back(half_to_float(s.hidden[static_cast<size_t>(i)]));
      if (last) row_item.push_back(&it);
      last_of.push_back(last ? &it : nullptr);
    }
  }
  flush();
  for (Item& it : items) it.s->held.assign(it.ask->history.begin(), it.ask->history.end());
  // Drafts: the first from each slot's last entry; each next from the module's own output and the
  // draft before it, the slots still drafting in one step.
  std::vector<Item*> active;
  for (Item& it : items) active.push_back(&it);
  while (!active.empty()) {
    std::vector<Item*> next;
    for (Item* it : active) {
      const int32_t tok = argmax(it->logits.data(), nv_);
      if (p_min > 0.0f && top_probability(it->logits.data(), nv_, tok) < static_cast<double>(p_min)) continue;
      it->ask->out->push_back(tok);
      if (static_cast<int64_t>(it->ask->out->size()) < it->k) next.push_back(it);
    }
    if (next.empty()) break;
    for (size_t i = 0; i < next.size(); i += static_cast<size_t>(nb)) {
      for (size_t j = i; j < std::min(next.size(), i + static_cast<size_t>(nb)); ++j) {
        Item* it = next[j];
        step.push_back({it->ask->out->back(), &it->s->seq, it->s->seq.pos(), true});
        h_in_.insert(h_in_.end(), it->h.begin(), it->h.end());
        row_item.push_back(it);
        last_of.push_back(it);
      }
      flush();
    }
    active = std::move(next);
  }
  for (Item& it : items) {
    it.s->seq.truncate(it.P);  // the drafted entries read the module's own rows, not the trunk's
    if (static_cast<int>(it.ask->out->size()) < n_min) it.ask->out->clear();
  }
}

const char* const kMtpCheckText =
    "The library opens at nine in the morning and closes at six in the evening. Visitors may borrow up to five books "
    "at a time, and each loan lasts three weeks. If you need a book for longer, you can renew it online or at the front "
    "desk, unless another reader has reserved it. Children under twelve must be accompanied by an adult. Please keep "
    "your voice low in the reading rooms, and remember that food and drinks are not allowed near the shelves.";

double mtp_acceptance(const Model& trunk, std::span<const int32_t> ids, ThreadPool& pool) {
  const Model& mtp = module_of(trunk);
  const int64_t n = static_cast<int64_t>(ids.size()), d = trunk.config().n_embd, nv = trunk.config().n_vocab;
  if (n < 3) throw Error(trunk.impl().source, "--spec mtp", "the MTP check's text", "at least 3 tokens", std::to_string(n));
  Sequence seq(trunk, n);
  Workspace ws(trunk, n);
  std::vector<StepToken> step;
  for (int64_t t = 0; t < n; ++t) step.push_back({ids[static_cast<size_t>(t)], &seq, t, true});
  std::vector<float> logits(static_cast<size_t>(n * nv)), hidden(static_cast<size_t>(n * d));
  forward(trunk, step, ws, pool, logits.data(), hidden.data());
  Sequence mseq(mtp, n);
  Workspace mws(mtp, n);
  step.clear();
  for (int64_t t = 0; t + 2 < n; ++t) step.push_back({ids[static_cast<size_t>(t + 1)], &mseq, t, true});
  std::vector<float> mlogits(static_cast<size_t>((n - 2) * nv));
  forward_mtp(mtp, step, hidden.data(), mws, pool, mlogits.data(), nullptr);
  int64_t agree = 0;
  for (int64_t t = 0; t + 2 < n; ++t)
    agree += argmax(mlogits.data() + t * nv, nv) == argmax(logits.data() + (t + 1) * nv, nv);
  return static_cast<double>(agree) / static_cast<double>(n - 2);
}

}  // namespace nvfp4
