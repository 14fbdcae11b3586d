// The token trie and its search (see token_mask.h).
#include "server/token_mask.h"

#include <algorithm>

namespace nvfp4::server {

TokenTrie::TokenTrie(const Tokenizer& tok) : n_vocab_(tok.n_vocab()) {
  std::vector<std::pair<std::string, int32_t>> words;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) {
      eog_.push_back(id);
      continue;
    }
    std::string b = tok.token_bytes(id);
    if (b.empty()) continue;
    if (tok.is_special(id)) special_.emplace_back(id, std::move(b));
    else words.emplace_back(std::move(b), id);
  }
  std::sort(words.begin(), words.end());
  // Preorder: each word adds the nodes of its bytes past the prefix it shares with the previous
  // word; `open` holds the nodes on the path of the previous word, whose subtrees end when a
  // later word leaves them.
  std::vector<uint32_t> open;
  const std::string* prev = nullptr;
  for (const auto& [w, id] : words) {
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < w.size() && (*prev)[common] == w[common]) ++common;
    while (open.size() > common) {
      nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
    for (size_t d = common; d < w.size(); ++d) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({static_cast<uint8_t>(w[d]), static_cast<uint16_t>(d + 1), 0, 0, 0});
    }
    Node& last = nodes_[open.back()];
    if (last.n_tokens == 0) last.first_token = static_cast<uint32_t>(tokens_.size());
    tokens_.push_back(id);  // words sort by bytes: equal ones are neighbours
    last.n_tokens += 1;
    max_depth_ = std::max(max_depth_, w.size());
    prev = &w;
  }
  while (!open.empty()) {
    nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
    open.pop_back();
  }
}

int64_t TokenTrie::fill(const JsonChecker& c, std::vector<uint8_t>& allowed) const {
  allowed.assign(static_cast<size_t>(n_vocab_), 0);
  int64_t n = 0;
  // at[d]: the checker after the first d bytes of the current path.
  std::vector<JsonChecker> at(max_depth_ + 1, c);
  size_t i = 0;
  while (i < nodes_.size()) {
    const Node& nd = nodes_[i];
    JsonChecker& cur = at[nd.depth];
    cur.assign(at[nd.depth - 1u]);
    if (!cur.feed(nd.byte)) {
      i = nd.end;  // no token under this byte
      continue;
    }
    for (uint32_t t = 0; t < nd.n_tokens; ++t) {
      allowed[static_cast<size_t>(tokens_[nd.first_token + t])] = 1;
      ++n;
    }
    ++i;
  }
  if (c.in_marker()) {
    JsonChecker s = c;
    for (const auto& [id, b] : special_) {
      s.assign(c);
      if (s.feed(b)) {
        allowed[static_cast<size_t>(id)] = 1;
        ++n;
      }
    }
  }
  if (c.accepting())
    for (int32_t id : eog_) {
      allowed[static_cast<size_t>(id)] = 1;
      ++n;
    }
  return n;
}

}  // namespace nvfp4::server
