// The token mask (server/token_mask.h) on SmolLM2's real 49k vocabulary: the trie's search allows
// exactly the tokens that a copy of the checker takes whole (brute force, token by token), at
// states inside keys, strings, numbers, literals and markers; greedy decoding of a fixed text
// through the masks reproduces it. The mask's time per step is printed (not asserted).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "model_path.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"
#include "server/json_checker.h"
#include "server/token_mask.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

std::vector<uint8_t> brute_force(const Tokenizer& tok, const JsonChecker& c) {
  std::vector<uint8_t> a(static_cast<size_t>(tok.n_vocab()), 0);
  JsonChecker s = c;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) {
      a[static_cast<size_t>(id)] = c.accepting();
      continue;
    }
    const std::string b = tok.token_bytes(id);
    if (b.empty() || (tok.is_special(id) && !c.in_marker())) continue;
    s.assign(c);
    a[static_cast<size_t>(id)] = s.feed(b);
  }
  return a;
}

TEST(TokenMask, EqualsBruteForceOnSmolLM2) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const auto file = gguf::File::open(path);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto tb = std::chrono::steady_clock::now();
  const TokenTrie trie(tok);
  const double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tb).count();
  Grammar g = json_schema_grammar(OJson::parse(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":5},"age":{"type":"integer"},"unit":{"enum":["celsius","fahrenheit"]},
      "tags":{"type":"array","items":{"type":"number"}},"ok":{"type":"boolean"}},
      "required":["name","age"],"additionalProperties":false})"), "s");
  g.prefix = g.literal("<tool_call>\n");
  g.suffix = g.literal("\n</tool_call>");
  const auto gp = std::make_shared<const Grammar>(std::move(g));
  const std::string doc = "<tool_call>\n{\"name\": \"Ann\u00e9\", \"age\": 42, \"unit\": \"fahrenheit\", "
                          "\"tags\": [1.5, -2e3], \"ok\": true}\n</tool_call>";
  JsonChecker c(gp);
  std::vector<uint8_t> allowed;
  double total_ms = 0;
  int n = 0;
  for (size_t i = 0; i <= doc.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t k = trie.fill(c, allowed);
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++n;
    if (i % 7 == 0 || i == doc.size()) {  // the brute force is slow: every 7th state
      const auto want = brute_force(tok, c);
      ASSERT_EQ(allowed, want) << "after " << i << " bytes: " << doc.substr(0, i);
      int64_t m = 0;
      for (uint8_t x : want) m += x;
      EXPECT_EQ(k, m);
    }
    if (i < doc.size()) {
      ASSERT_FALSE(c.done());
      ASSERT_TRUE(c.feed(static_cast<uint8_t>(doc[i]))) << i;
    }
  }
  EXPECT_TRUE(c.done());
  // The widest state: inside a string of any length, where most of the vocabulary is allowed.
  JsonChecker in_string(std::make_shared<const Grammar>(json_object_grammar()));
  ASSERT_TRUE(in_string.feed(R"({"a": ")"));
  const auto ts = std::chrono::steady_clock::now();
  const int64_t wide = trie.fill(in_string, allowed);
  const double string_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ts).count();
  EXPECT_GT(wide, tok.n_vocab() / 2);
  ASSERT_EQ(allowed, brute_force(tok, in_string));
  std::cout << "inside a string: " << wide << " tokens allowed, " << string_ms << " ms" << std::endl;
  std::cout << "token mask over " << tok.n_vocab() << " tokens: " << total_ms / n << " ms per state on average ("
            << n << " states); the trie laid once in " << build_ms << " ms" << std::endl;
}

// Greedy "decoding" of a document's own tokens through the masks: every token of the document's
// tokenization is allowed in turn, and the document ends the checker.
TEST(TokenMask, TheDocumentsOwnTokensAreAllowed) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const auto file = gguf::File::open(path);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const TokenTrie trie(tok);
  const auto g = std::make_shared<const Grammar>(json_object_grammar());
  const std::string doc = R"({"city": "Paris", "temps": [18, 21.5, -3], "sunny": true, "note": null, "nested": {"a": []}})";
  JsonChecker c(g);
  std::vector<uint8_t> allowed;
  for (int32_t id : tok.encode(doc, false)) {
    ASSERT_GT(trie.fill(c, allowed), 0);
    ASSERT_TRUE(allowed[static_cast<size_t>(id)]) << "token " << id << " '" << tok.token_bytes(id) << "'";
    ASSERT_TRUE(c.feed(tok.token_bytes(id)));
  }
  EXPECT_TRUE(c.done());
  // Whole: no token but end of generation is allowed.
  trie.fill(c, allowed);
  for (int32_t id = 0; id < tok.n_vocab(); ++id) EXPECT_EQ(allowed[static_cast<size_t>(id)] != 0, tok.is_eog(id)) << id;
}

}  // namespace
}  // namespace nvfp4::server
