// Log-probabilities of generated tokens (OpenAI's logprobs / top_logprobs): the log-softmax of
// the float logits the sampler saw, before temperature, top-k or top-p, computed in a pinned
// order (max, then the sum of exp(l - max) over the vocabulary in index order, in double), so a
// token's value is a function of its logits alone: the same bits at any batch composition.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "nvfp4/tokenizer.h"

namespace nvfp4::server {

struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;  // the n_top most likely, best first (ties: lower id)
};

// The logprob of `token` and the n_top (0..n) most likely tokens under log_softmax(logits[0..n)).
TokenLogprob token_logprob(const float* logits, int64_t n, int32_t token, int n_top);

// Response shapes. Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}], "refusal": null}.
// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"};
// text_offset counts from `offset` (bytes of the generated text before these tokens) and
// advances it.
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& lp, const Tokenizer& tok);
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprob>& lp, const Tokenizer& tok, int64_t& offset);

}  // namespace nvfp4::server
