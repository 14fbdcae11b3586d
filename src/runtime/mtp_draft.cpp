#include "nvfp4/mtp_draft.h"

#include <algorithm>
#include <cstring>

#include "nvfp4/draft.h"
#include "nvfp4/error.h"
#include "nvfp4/sampler.h"
#include "ops/model_impl.h"

namespace nvfp4 {

namespace {
const Model& module_of(const Model& trunk) {
  if (!trunk.mtp())
    throw Error(trunk.impl().source, "--spec mtp", "a model loaded with its multi-token-prediction (MTP) layers", "an MTP module",
                "none loaded");
  return *trunk.mtp();
}
}  // namespace

MtpProposer::MtpProposer(const Model& trunk, int64_t n_ctx, int64_t n_batch, KvType kv)
    : mtp_(module_of(trunk)),
      seq_(mtp_, n_ctx, kv),
      ws_(mtp_, std::max<int64_t>(1, std::min(n_batch, n_ctx))),
      logits_(static_cast<size_t>(trunk.config().n_vocab)),
      d_(trunk.config().n_embd) {}

void MtpProposer::reset() {
  seq_.truncate(0);
  held_.clear();
  hidden_.clear();
  h0_ = 0;
}

void MtpProposer::observe(int64_t p0, const float* hidden, int64_t n) {
  const int64_t rows = static_cast<int64_t>(hidden_.size()) / d_;
  if (rows == 0 || p0 < h0_ || p0 > h0_ + rows) {  // a new run of positions (a gap loses the ones between)
    hidden_.clear();
    h0_ = p0;
  } else {
    hidden_.resize(static_cast<size_t>((p0 - h0_) * d_));  // rows from p0 on were a rejected draft's
  }
  hidden_.insert(hidden_.end(), hidden, hidden + n * d_);
}

std::vector<int32_t> MtpProposer::propose(std::span<const int32_t> history, int k, ThreadPool& pool) {
  std::vector<int32_t> draft;
  const int64_t P = static_cast<int64_t>(history.size()) - 1;  // trunk positions held
  if (P < 1 || k <= 0) return draft;
  // The exact entries: those whose tokens (p and p + 1) still agree with the history.
  const size_t c = static_cast<size_t>(std::mismatch(held_.begin(), held_.end(), history.begin(), history.end()).first - held_.begin());
  const int64_t keep = std::min<int64_t>(seq_.pos(), static_cast<int64_t>(c) - 1);
  seq_.truncate(std::max<int64_t>(keep, 0));
  held_.resize(static_cast<size_t>(seq_.pos()) + (seq_.pos() > 0 ? 1 : 0));
  k = static_cast<int>(std::min<int64_t>(k, seq_.n_ctx() - P));
  if (k <= 0) return draft;
  // The last entry's logits give the first draft: with nothing new to catch up on, run it again.
  if (seq_.pos() == P) {
    seq_.truncate(P - 1);
    held_.resize(static_cast<size_t>(P));
  }
  // Catch up: entries E .. P - 1 read the trunk's rows of those positions and tokens E + 1 .. P.
  const int64_t E = seq_.pos(), rows = static_cast<int64_t>(hidden_.size()) / d_;
  if (E < h0_ || P > h0_ + rows) return draft;  // not observed: no draft this time
  const int64_t nb = ws_.n_batch();
  std::vector<StepToken> step;
  std::vector<float> out(static_cast<size_t>(std::min(nb, P - E) * d_));
  for (int64_t s = E; s < P; s += nb) {
    const int64_t n = std::min(nb, P - s);
    step.clear();
    for (int64_t i = 0; i < n; ++i)
      step.push_back({history[static_cast<size_t>(s + i + 1)], &seq_, s + i, s + i + 1 == P});
    if (out.size() < static_cast<size_t>(n * d_)) out.resize(static_cast<size_t>(n * d_));
    forward_mtp(mtp_, step, hidden_.data() + (s - h0_) * d_, ws_, pool, logits_.data(), out.data());
    evaluated_ += n;
    if (s + n == P) out_.assign(out.begin() + (n - 1) * d_, out.begin() + n * d_);
  }
  held_.assign(history.begin(), history.end());
  // The trunk's rows before P - 1 are consumed (P - 1's is kept for a run again, above).
  hidden_.erase(hidden_.begin(), hidden_.begin() + (P - 1 - h0_) * d_);
  h0_ = P - 1;
  // Drafts: the first from the last entry; each next from the module's own output and the draft.
  const int64_t nv = static_cast<int64_t>(logits_.size());
  std::vector<float> h(out_);
  while (true) {
    const int32_t tok = argmax(logits_.data(), nv);
    if (p_min > 0.0f && top_probability(logits_.data(), nv, tok) < static_cast<double>(p_min)) break;
    draft.push_back(tok);
    if (static_cast<int>(draft.size()) >= k) break;
    const StepToken st{tok, &seq_, seq_.pos(), true};
    forward_mtp(mtp_, std::span<const StepToken>(&st, 1), h.data(), ws_, pool, logits_.data(), out_.data());
    ++evaluated_;
    h = out_;
  }
  seq_.truncate(P);  // the drafted entries read the module's own rows, not the trunk's
  if (static_cast<int>(draft.size()) < n_min) draft.clear();
  return draft;
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
