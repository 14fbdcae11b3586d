#include "server/logprobs.h"

#include <algorithm>
#include <cmath>

namespace nvfp4::server {

using nlohmann::json;

TokenLogprob token_logprob(const float* logits, int64_t n, int32_t token, int n_top) {
  double m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - m);
  const double lse = m + std::log(sum);
  TokenLogprob r;
  r.token = token;
  r.logprob = static_cast<double>(logits[token]) - lse;
  const int64_t k = std::clamp<int64_t>(n_top, 0, n);
  if (k > 0) {
    std::vector<int32_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    for (int64_t i = 0; i < k; ++i) {
      const int32_t t = idx[static_cast<size_t>(i)];
      r.top.emplace_back(t, static_cast<double>(logits[t]) - lse);
    }
  }
  return r;
}

namespace {

json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// A logprob as JSON: -inf (a token masked to -inf) has no JSON number; OpenAI clients read a
// very negative one.
json value(double lp) { return std::isfinite(lp) ? json(lp) : json(-9999.0); }

}  // namespace

json chat_logprobs_json(const std::vector<TokenLogprob>& lp, const Tokenizer& tok) {
  json content = json::array();
  for (const TokenLogprob& t : lp) {
    const std::string s = tok.token_bytes(t.token);
    json top = json::array();
    for (const auto& [id, v] : t.top) {
      const std::string ts = tok.token_bytes(id);
      top.push_back({{"token", ts}, {"logprob", value(v)}, {"bytes", bytes_json(ts)}});
    }
    content.push_back({{"token", s}, {"logprob", value(t.logprob)}, {"bytes", bytes_json(s)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lp, const Tokenizer& tok, int64_t& offset) {
  json tokens = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenLogprob& t : lp) {
    const std::string s = tok.token_bytes(t.token);
    tokens.push_back(s);
    values.push_back(value(t.logprob));
    json top = json::object();
    for (const auto& [id, v] : t.top) top[tok.token_bytes(id)] = value(v);
    top[s] = value(t.logprob);  // the sampled token is always there (up to n + 1 entries), as OpenAI's
    tops.push_back(top);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(s.size());
  }
  return {{"tokens", tokens}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace nvfp4::server
