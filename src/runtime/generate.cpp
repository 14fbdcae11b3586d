#include "nvfp4/generate.h"

#include <algorithm>
#include <chrono>
#include <deque>

#include "nvfp4/error.h"
#include "nvfp4/speculate.h"
#include "ops/model_impl.h"

namespace nvfp4 {

std::vector<int32_t> NgramProposer::propose(std::span<const int32_t> h, int k) const {
  const int64_t n = static_cast<int64_t>(h.size());
  for (int64_t len = std::min<int64_t>(n_max, n - 1); len >= n_min && len >= 1; --len) {
    const int32_t* suffix = h.data() + n - len;
    // The latest earlier occurrence (start s + len <= n - 1, so something follows it).
    for (int64_t s = n - len - 1; s >= 0; --s) {
      if (!std::equal(suffix, suffix + len, h.data() + s)) continue;
      const int64_t from = s + len, count = std::min<int64_t>(k, n - from);
      return std::vector<int32_t>(h.begin() + from, h.begin() + from + count);
    }
  }
  return {};
}

namespace {
using clk = std::chrono::steady_clock;
double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }
}  // namespace

GenerateResult generate(const Model& model, Sequence& seq, Workspace& ws, ThreadPool& pool, std::span<const int32_t> prompt,
                        const GenerateOptions& opt, const std::function<bool(int32_t)>& is_eog,
                        const std::function<void(int32_t)>& on_token, bool allow_drift) {
  const Mode mode = model.mode();
  if (opt.speculative && !allow_drift && mode != Mode::a16q8 && mode != Mode::w4a4)
    throw Error(model.impl().source, "", "--spec: speculative decoding in mode " + std::string(mode_name(mode)) +
                    ": its logits may change with the step's composition, so output could drift from plain decoding",
                "--precision a16q8 or w4a4 (bit-identical), or --spec-allow-drift", std::string(mode_name(mode)));
  if (seq.pos() != 0) throw Error(model.impl().source, "", "generate: the sequence must start empty", "0 positions", std::to_string(seq.pos()));
  if (prompt.empty()) throw Error(model.impl().source, "", "empty prompt", "at least one token", "0 tokens");
  GenerateResult r;
  const int64_t nv = model.config().n_vocab, nb = ws.n_batch();
  Sampler sampler(opt.sampling);
  // Rows of logits a step writes: the prompt's last token, or a verification step's token and
  // its drafts (at most min(draft_max, n_batch - 1) of them). Not n_batch rows: at SmolLM2's
  // vocabulary and batch 64 those were 12 MiB, written as zeros up front, for one row in use.
  const int64_t rows = opt.speculative ? std::min<int64_t>(std::max(1, opt.draft_max), std::max<int64_t>(nb - 1, 0)) + 1 : 1;
  std::vector<float> logits(static_cast<size_t>(nv) * static_cast<size_t>(rows));
  std::vector<StepToken> step;
  MtpProposer* const mtp = opt.speculative ? opt.mtp : nullptr;
  AssistantProposer* const assistant = opt.speculative ? opt.assistant : nullptr;
  // With the MTP proposer or the assistant every step writes its rows' hidden states and hands them over.
  std::vector<float> hidden(mtp || assistant ? static_cast<size_t>(std::max(nb, rows) * model.config().n_embd) : 0);
  // With the DFlash proposer every step writes its rows' taps (the drafter's layers) for it.
  DflashProposer* const dflash = opt.speculative ? opt.dflash : nullptr;
  const std::span<const int> tap_layers = dflash ? dflash->drafter().taps() : std::span<const int>();
  std::vector<float> taps(static_cast<size_t>(std::max(nb, rows)) * tap_layers.size() * static_cast<size_t>(model.config().n_embd));
  const auto run_step = [&]() {
    const int64_t p0 = step.front().pos, n = static_cast<int64_t>(step.size());
    if (dflash) {
      forward(model, step, ws, pool, logits.data(), nullptr, LayerTaps{tap_layers, taps.data()});
      dflash->observe(p0, taps.data(), n, pool);
      return;
    }
    forward(model, step, ws, pool, logits.data(), mtp || assistant ? hidden.data() : nullptr);
    if (mtp) mtp->observe(p0, hidden.data(), n);
    if (assistant) assistant->observe(p0, hidden.data(), n);
  };
  if (mtp) mtp->reset();
  if (assistant) assistant->reset();
  if (dflash) dflash->reset();
  const auto t0 = clk::now();
  for (size_t s = 0; s < prompt.size(); s += static_cast<size_t>(nb)) {
    const size_t k = std::min(prompt.size() - s, static_cast<size_t>(nb));
    step.clear();
    for (size_t i = 0; i < k; ++i)
      step.push_back({prompt[s + i], &seq, seq.pos() + static_cast<int64_t>(i), s + i + 1 == prompt.size()});
    run_step();
  }
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  DraftModelProposer* const draft_model = opt.speculative ? opt.draft : nullptr;
  if (draft_model) {
    const auto td = clk::now();
    draft_model->reset();
    draft_model->sync(history);
    r.draft_s += since(td);
  }
  r.prompt_s = since(t0);
  // emit(): the token of generation index tokens.size(), or false at the end.
  const auto emit = [&](const float* row) {
    const int32_t tok = sampler.sample_at(row, nv, r.tokens.size());
    if (is_eog(tok)) {
      r.stop = "eog";
      return false;
    }
    r.tokens.push_back(tok);
    history.push_back(tok);
    if (on_token) on_token(tok);
    return static_cast<int64_t>(r.tokens.size()) < opt.n_predict;
  };
  if (opt.n_predict <= 0 || !emit(logits.data())) return r;
  const auto tg = clk::now();
  bool spec = opt.speculative;
  DraftLength k;
  k.reset(std::max(1, opt.draft_max));
  double plain_s = 0;
  int64_t plain_steps = 0, plain_tokens = 0;
  std::deque<std::pair<double, int64_t>> window;  // recent verification steps: (seconds, tokens)
  while (true) {
    const int64_t room = seq.n_ctx() - seq.pos();  // positions left, the last token's included
    if (room < 1) break;
    std::vector<int32_t> draft;
    const auto ts = clk::now();
    // With the back-off on, two plain steps first measure what speculation must beat.
    bool tried = false;
    if (spec && (plain_steps >= 2 || !opt.backoff)) {
      const int64_t limit = draft_limit(k.k(), seq, opt.n_predict - static_cast<int64_t>(r.tokens.size()), nb - 1);
      tried = limit > 0;
      if (tried && draft_model) {
        draft = draft_model->propose(history, static_cast<int>(limit));
        r.draft_s += since(ts);
      } else if (tried && mtp) {
        draft = mtp->propose(history, static_cast<int>(limit), pool);
        r.draft_s += since(ts);
      } else if (tried && dflash) {
        draft = dflash->propose(history, static_cast<int>(limit), pool);
        r.draft_s += since(ts);
      } else if (tried && assistant) {
        draft = assistant->propose(history, static_cast<int>(limit), seq, pool);
        r.draft_s += since(ts);
      } else if (tried) {
        draft = opt.ngram.propose(history, static_cast<int>(limit));
      }
    }
    step.clear();
    const int64_t p0 = seq.pos();
    begin_verify(seq, draft.size());
    step.push_back({history.back(), &seq, p0, true});
    for (size_t i = 0; i < draft.size(); ++i) step.push_back({draft[i], &seq, p0 + 1 + static_cast<int64_t>(i), true});
    run_step();
    ++r.steps;
    r.drafted += static_cast<int64_t>(draft.size());
    // Row i is the logits after step token i; drafts are accepted while they equal the pick.
    const Verdict v = verify_drafts(draft, [&](size_t i) {
      const size_t before = r.tokens.size();
      Pick p;
      p.more = emit(logits.data() + i * static_cast<size_t>(nv));
      p.emitted = r.tokens.size() > before;
      p.token = p.emitted ? r.tokens.back() : -1;
      return p;
    });
    r.accepted += static_cast<int64_t>(v.accepted);
    // Keep the state of what was accepted (the step's first token and the kept drafts).
    end_verify(seq, p0, v.kept);
    const bool more = !v.ended;
    const double dt = since(ts);
    const int64_t made = static_cast<int64_t>(v.kept) + 1;
    // An empty prompt lookup costs nothing: the step is a plain one. A draft model's empty draft
    // cost its evaluation: the step counts against speculation.
    if (draft.empty() && !(tried && (draft_model || mtp || dflash || assistant))) {
      plain_s += dt;
      ++plain_steps;
      plain_tokens += 1;
    } else {
      k.verified(draft.size(), v.kept, opt.draft_max);
      window.emplace_back(dt, made);
      if (window.size() > 16) window.pop_front();
      if (opt.backoff && window.size() == 16 && plain_steps > 0) {
        double ws_ = 0;
        int64_t wt = 0;
        for (const auto& [s, t] : window) { ws_ += s; wt += t; }
        if (static_cast<double>(wt) / ws_ < static_cast<double>(plain_tokens) / plain_s) {
          spec = false;
          r.backed_off = true;
        }
      }
    }
    if (!more) break;
  }
  r.gen_s = since(tg);
  return r;
}

}  // namespace nvfp4
