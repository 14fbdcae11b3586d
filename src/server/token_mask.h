// The tokens a JsonChecker takes next, found fast enough to ask at every step: the vocabulary's
// byte strings are laid once per model in a trie (preorder, each node with the end of its
// subtree), and the search feeds the trie's bytes to copies of the checker, one per depth, so a
// byte refused prunes every token under it. Inside a string of any length (the widest state: most
// of the vocabulary goes) the tokens that leave the string as it was (no quote, whole UTF-8: found
// once, by a checker in such a string) are allowed at once and only the others are searched.
// Special tokens are left out of the tries (the text of a control token is never JSON); they are
// tried one by one only while the checker is inside a marker (a tool call's prefix or suffix, which
// may be one special token such as [TOOL_CALLS]), and end-of-generation tokens are allowed when the
// document is whole.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4/tokenizer.h"
#include "server/json_checker.h"

namespace nvfp4::server {

class TokenTrie {
 public:
  explicit TokenTrie(const Tokenizer& tok);
  // allowed[id] = 1 when token id may come next, else 0 (resized to the vocabulary). Returns the
  // number allowed.
  int64_t fill(const JsonChecker& c, std::vector<uint8_t>& allowed) const;
  int64_t n_vocab() const { return n_vocab_; }

 private:
  struct Node {
    uint8_t byte;
    uint16_t depth;   // 1 for a token's first byte
    uint32_t end;     // one past the last node of its subtree
    uint32_t first_token, n_tokens;  // tokens[first_token, +n_tokens) end here
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> tokens;
    size_t max_depth = 0;
  };
  static Trie lay(std::vector<std::pair<std::string, int32_t>> words);
  static int64_t search(const Trie& t, const JsonChecker& c, std::vector<uint8_t>& allowed);

  Trie all_;                     // every token but the special ones
  Trie rest_;                    // of those, the ones not in plain_
  std::vector<int32_t> plain_;   // tokens that leave a string of any length as it was
  std::vector<std::pair<int32_t, std::string>> special_;  // not end of generation
  std::vector<int32_t> eog_;
  int64_t n_vocab_ = 0;
};

}  // namespace nvfp4::server
