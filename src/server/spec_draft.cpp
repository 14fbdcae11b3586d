#include "server/spec_draft.h"

#include <algorithm>
#include <cstring>

#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "nvfp4/sampler.h"
#include "nvfp4/speculate.h"
#include "ops/model_impl.h"

namespace nvfp4::server {

DraftBatch::DraftBatch(const Model& draft, int slots, int64_t n_ctx, int64_t n_batch, KvType kv)
    : model_(draft),
      held_(static_cast<size_t>(slots)),
      ws_(draft, std::max<int64_t>({1, n_batch, static_cast<int64_t>(slots)})),
      logits_(static_cast<size_t>(ws_.n_batch()) * static_cast<size_t>(draft.config().n_vocab)) {
  for (int i = 0; i < slots; ++i) seqs_.push_back(std::make_unique<Sequence>(draft, n_ctx, kv));
}

// Runs the step; row k of its logits belongs to ask row_ask[k] and becomes its latest logits.
void DraftBatch::run(std::vector<StepToken>& step, const std::vector<int>& row_ask, ThreadPool& pool) {
  if (step.empty()) return;
  forward(model_, step, ws_, pool, logits_.data());
  evaluated_ += static_cast<int64_t>(step.size());
  const size_t nv = static_cast<size_t>(model_.config().n_vocab);
  for (size_t k = 0; k < row_ask.size(); ++k)
    std::memcpy(last_[static_cast<size_t>(row_ask[k])].data(), logits_.data() + k * nv, nv * sizeof(float));
  step.clear();
}

void DraftBatch::propose(std::span<const Ask> asks, ThreadPool& pool) {
  try {
    draft(asks, pool);
  } catch (...) {
    for (size_t i = 0; i < seqs_.size(); ++i) {  // what the caches hold is unknown now
      seqs_[i]->truncate(0);
      held_[i].clear();
    }
    throw;
  }
}

void DraftBatch::draft(std::span<const Ask> asks, ThreadPool& pool) {
  const size_t nv = static_cast<size_t>(model_.config().n_vocab);
  const size_t nb = static_cast<size_t>(ws_.n_batch());
  last_.resize(asks.size());
  for (auto& l : last_) l.resize(nv);
  std::vector<StepToken> step;
  std::vector<int> row_ask;
  // Catch-up: each slot keeps the longest common prefix of what it holds and its history (all but
  // the last token, run again for its logits) and evaluates the rest; all slots share the steps.
  for (size_t a = 0; a < asks.size(); ++a) {
    const Ask& q = asks[a];
    q.out->clear();
    if (q.limit <= 0 || q.history.empty()) continue;
    Sequence& seq = *seqs_[static_cast<size_t>(q.slot)];
    std::vector<int32_t>& held = held_[static_cast<size_t>(q.slot)];
    if (static_cast<int64_t>(q.history.size()) + q.limit - 1 > seq.n_ctx())
      throw Error(model_.impl().source, "", "draft model: history and draft longer than its context (--ctx)", std::to_string(seq.n_ctx()) + " positions",
                  std::to_string(q.history.size() + static_cast<size_t>(q.limit) - 1));
    const size_t c = static_cast<size_t>(keep_reusable_prefix(seq, held, q.history));
    for (size_t i = c; i < q.history.size(); ++i) {
      const bool last = i + 1 == q.history.size();
      step.push_back({q.history[i], &seq, static_cast<int64_t>(i), last});
      if (last) row_ask.push_back(static_cast<int>(a));
      held.push_back(q.history[i]);
      if (step.size() == nb) {
        run(step, row_ask, pool);
        row_ask.clear();
      }
    }
  }
  run(step, row_ask, pool);
  row_ask.clear();
  // Greedy drafting, one token per slot and step; the last draft token is not run. A slot whose
  // argmax is less likely than p_min stops there.
  std::vector<char> stopped(asks.size(), 0);
  for (;;) {
    for (size_t a = 0; a < asks.size(); ++a) {
      const Ask& q = asks[a];
      if (stopped[a] || q.limit <= 0 || static_cast<int64_t>(q.out->size()) >= q.limit) continue;
      const int32_t tok = argmax(last_[a].data(), static_cast<int64_t>(nv));
      if (p_min > 0.0f && top_probability(last_[a].data(), static_cast<int64_t>(nv), tok) < static_cast<double>(p_min)) {
        stopped[a] = 1;
        continue;
      }
      q.out->push_back(tok);
      if (static_cast<int64_t>(q.out->size()) >= q.limit) continue;
      Sequence& seq = *seqs_[static_cast<size_t>(q.slot)];
      step.push_back({tok, &seq, seq.pos(), true});
      held_[static_cast<size_t>(q.slot)].push_back(tok);
      row_ask.push_back(static_cast<int>(a));
    }
    if (step.empty()) break;
    run(step, row_ask, pool);
    row_ask.clear();
  }
}

}  // namespace nvfp4::server
