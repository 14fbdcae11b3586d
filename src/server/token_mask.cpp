// The token tries and their search (see token_mask.h).
#include "server/token_mask.h"

#include <algorithm>
#include <memory>

namespace nvfp4::server {

TokenTrie::Trie TokenTrie::lay(std::vector<std::pair<std::string, int32_t>> words) {
  Trie t;
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
      t.nodes[open.back()].end = static_cast<uint32_t>(t.nodes.size());
      open.pop_back();
    }
    for (size_t d = common; d < w.size(); ++d) {
      open.push_back(static_cast<uint32_t>(t.nodes.size()));
      t.nodes.push_back({static_cast<uint8_t>(w[d]), static_cast<uint16_t>(d + 1), 0, 0, 0});
    }
    Node& last = t.nodes[open.back()];
    if (last.n_tokens == 0) last.first_token = static_cast<uint32_t>(t.tokens.size());
    t.tokens.push_back(id);  // words sort by bytes: equal ones are neighbours
    last.n_tokens += 1;
    t.max_depth = std::max(t.max_depth, w.size());
    prev = &w;
  }
  while (!open.empty()) {
    t.nodes[open.back()].end = static_cast<uint32_t>(t.nodes.size());
    open.pop_back();
  }
  return t;
}

TokenTrie::TokenTrie(const Tokenizer& tok) : n_vocab_(tok.n_vocab()) {
  std::vector<std::pair<std::string, int32_t>> words, rest;
  // A checker inside a string of any length: a token it takes that leaves the string as it was
  // (no quote among its bytes, so the string is still open, and no byte sequence left unfinished)
  // is taken in every such string, whatever holds the string.
  JsonChecker in_string(std::make_shared<const Grammar>(json_object_grammar()));
  (void)in_string.feed(std::string_view("{\"\":\""));
  JsonChecker probe = in_string;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) {
      eog_.push_back(id);
      continue;
    }
    std::string b = tok.token_bytes(id);
    if (b.empty()) continue;
    if (tok.is_special(id)) {
      special_.emplace_back(id, std::move(b));
      continue;
    }
    probe.assign(in_string);
    if (b.find('"') == std::string::npos && probe.feed(b) && probe.in_free_string()) {
      plain_.push_back(id);
    } else {
      rest.emplace_back(b, id);
    }
    words.emplace_back(std::move(b), id);
  }
  all_ = lay(std::move(words));
  rest_ = lay(std::move(rest));
}

int64_t TokenTrie::search(const Trie& t, const JsonChecker& c, std::vector<uint8_t>& allowed) {
  int64_t n = 0;
  // at[d]: the checker after the first d bytes of the current path.
  std::vector<JsonChecker> at(t.max_depth + 1, c);
  size_t i = 0;
  while (i < t.nodes.size()) {
    const Node& nd = t.nodes[i];
    JsonChecker& cur = at[nd.depth];
    cur.assign(at[nd.depth - 1u]);
    if (!cur.feed(nd.byte)) {
      i = nd.end;  // no token under this byte
      continue;
    }
    for (uint32_t k = 0; k < nd.n_tokens; ++k) {
      allowed[static_cast<size_t>(t.tokens[nd.first_token + k])] = 1;
      ++n;
    }
    ++i;
  }
  return n;
}

int64_t TokenTrie::fill(const JsonChecker& c, std::vector<uint8_t>& allowed) const {
  allowed.assign(static_cast<size_t>(n_vocab_), 0);
  int64_t n = 0;
  if (c.in_free_string()) {
    for (int32_t id : plain_) allowed[static_cast<size_t>(id)] = 1;
    n = static_cast<int64_t>(plain_.size()) + search(rest_, c, allowed);
  } else {
    n = search(all_, c, allowed);
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
