#include "nvfp4/draft.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nvfp4/error.h"
#include "nvfp4/sampler.h"
#include "nvfp4/speculate.h"
#include "ops/model_impl.h"

namespace nvfp4 {

namespace {
// A token's bytes for a message: printable ASCII as is, the rest as \xNN.
std::string shown(const std::string& b) {
  std::string s = "'";
  for (unsigned char c : b) {
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      s += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    }
  }
  return s + "'";
}
}  // namespace

void check_draft_vocab(const Tokenizer& t, int64_t t_rows, const std::string& t_file, const Tokenizer& d,
                       int64_t d_rows, const std::string& d_file) {
  const std::string rule = "the draft model's vocabulary must be the target's (" + t_file + ")";
  const auto refuse = [&](const std::string& what, const std::string& expected, const std::string& found) {
    throw Error(d_file, "", rule + ": " + what, expected + " as in the target " + t_file, found + " in the draft " + d_file);
  };
  if (t.n_vocab() != d.n_vocab())
    refuse("token count", std::to_string(t.n_vocab()) + " tokens", std::to_string(d.n_vocab()) + " tokens");
  if (t_rows != d_rows)
    refuse("output rows (model vocabulary)", std::to_string(t_rows) + " rows", std::to_string(d_rows) + " rows");
  if (t.bos() != d.bos()) refuse("bos token id", std::to_string(t.bos()), std::to_string(d.bos()));
  if (t.eos() != d.eos()) refuse("eos token id", std::to_string(t.eos()), std::to_string(d.eos()));
  if (t.add_bos() != d.add_bos())
    refuse("add_bos", t.add_bos() ? "true" : "false", d.add_bos() ? "true" : "false");
  for (int32_t id = 0; id < t.n_vocab(); ++id) {
    const std::string a = t.token_bytes(id), b = d.token_bytes(id);
    if (a != b) refuse("token " + std::to_string(id), shown(a), shown(b));
    if (t.is_special(id) != d.is_special(id))
      refuse("token " + std::to_string(id) + " special flag", t.is_special(id) ? "special" : "normal",
             d.is_special(id) ? "special" : "normal");
  }
}

double top_probability(const float* logits, int64_t n_vocab, int32_t top) {
  const float mx = logits[top];
  double sum = 0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  return 1.0 / sum;
}

DraftModelProposer::DraftModelProposer(const Model& draft, ThreadPool& pool, int64_t n_ctx, int64_t n_batch, KvType kv)
    : model_(draft),
      pool_(pool),
      seq_(draft, n_ctx, kv),
      ws_(draft, std::max<int64_t>(1, std::min(n_batch, n_ctx))),
      logits_(static_cast<size_t>(draft.config().n_vocab)) {}

void DraftModelProposer::reset() {
  seq_.truncate(0);
  held_.clear();
}

void DraftModelProposer::feed(std::span<const int32_t> tokens) {
  const size_t nb = static_cast<size_t>(ws_.n_batch());
  std::vector<StepToken> step;
  for (size_t s = 0; s < tokens.size(); s += nb) {
    const size_t k = std::min(tokens.size() - s, nb);
    step.clear();
    for (size_t i = 0; i < k; ++i)
      step.push_back({tokens[s + i], &seq_, seq_.pos() + static_cast<int64_t>(i), s + i + 1 == tokens.size()});
    forward(model_, step, ws_, pool_, logits_.data());
  }
  held_.insert(held_.end(), tokens.begin(), tokens.end());
  evaluated_ += static_cast<int64_t>(tokens.size());
}

void DraftModelProposer::catch_up(std::span<const int32_t> h) {
  if (h.empty()) throw Error(model_.impl().source, "", "draft model: empty history", "at least one token", "0 tokens");
  if (static_cast<int64_t>(h.size()) > seq_.n_ctx())
    throw Error(model_.impl().source, "", "draft model: history longer than its context (--ctx)", std::to_string(seq_.n_ctx()) + " positions",
                std::to_string(h.size()));
  // The last token is run again for its logits when already held.
  const int64_t c = keep_reusable_prefix(seq_, held_, h);
  feed(h.subspan(static_cast<size_t>(c)));
}

void DraftModelProposer::sync(std::span<const int32_t> history) { catch_up(history); }

std::vector<int32_t> DraftModelProposer::propose(std::span<const int32_t> history, int k) {
  std::vector<int32_t> draft;
  // history.size() + k - 1 positions are held at the end (the last draft token is not run).
  k = static_cast<int>(std::min<int64_t>(k, seq_.n_ctx() - static_cast<int64_t>(history.size()) + 1));
  if (k <= 0) return draft;
  catch_up(history);
  const int64_t nv = model_.config().n_vocab;
  while (true) {
    const int32_t tok = argmax(logits_.data(), nv);
    if (p_min > 0.0f && top_probability(logits_.data(), nv, tok) < static_cast<double>(p_min)) break;
    draft.push_back(tok);
    if (static_cast<int>(draft.size()) >= k) break;
    feed(std::span<const int32_t>(&draft.back(), 1));
  }
  if (static_cast<int>(draft.size()) < n_min) draft.clear();
  return draft;
}

}  // namespace nvfp4
