// Constrained decoding's masks from xgrammar (server/grammar_compile.h) on tiny vocabularies of
// both kinds: the bytes a token writes are what the grammar sees (SentencePiece's ▁ and <0xHH>
// byte fallback, byte-level BPE's byte map), special tokens are refused but where a tool call's
// markers spell them, end-of-generation tokens are allowed once the text is whole, and a grammar
// that admits nothing is a 400 naming its field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "nvfp4/tokenizer.h"
#include "server/api_error.h"
#include "server/grammar_compile.h"
#include "server/output_grammar.h"
#include "server/request.h"
#include "server/ebnf_literal.h"
#include "server/schema_guard.h"

namespace nvfp4::server {
namespace {

using OJson = nlohmann::ordered_json;

std::shared_ptr<const GrammarSpec> gbnf(const std::string& g) {
  return parse_gen_request(OJson{{"prompt", "x"}, {"grammar", g}}.dump(), false).grammar;
}

std::vector<int32_t> allowed_ids(OutputMatcher& m, int64_t nv) {
  std::vector<uint8_t> a;
  m.fill(a, nv);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i]) ids.push_back(static_cast<int32_t>(i));
  return ids;
}

using Ids = std::vector<int32_t>;

TEST(GrammarCompile, SentencePieceBytesAndSpecialTokens) {
  TokenizerData d;
  d.model = "llama";
  d.pre = "default";
  //          0        1      2       3     4     5      6         7         8        9
  d.tokens = {"<unk>", "<s>", "</s>", "▁", "yes", "▁yes", "<0x7B>", "<0x7D>", "{", "[TOOL_CALLS]"};
  d.token_types = {2, 3, 3, 1, 1, 1, 6, 6, 1, 3};
  d.scores.assign(d.tokens.size(), 0.0f);
  d.merges = {"▁ yes"};
  d.unk = 0;
  d.bos = 1;
  d.eos = 2;
  const Tokenizer tok = Tokenizer::build(d);
  OutputCompiler oc(tok);
  // " yes{}": "▁yes" is " yes", <0x7B> is "{" as the token "{" is.
  OutputMatcher m(oc.compile(*gbnf(R"(root ::= " yes{}")")));
  EXPECT_EQ(allowed_ids(m, 10), (Ids{3, 5}));
  ASSERT_TRUE(m.accept(5));
  EXPECT_EQ(allowed_ids(m, 10), (Ids{6, 8}));
  ASSERT_TRUE(m.accept(6));
  EXPECT_FALSE(m.done());
  EXPECT_EQ(allowed_ids(m, 10), (Ids{7}));
  ASSERT_TRUE(m.accept(7));
  EXPECT_TRUE(m.done());  // whole, and only the end may follow
  EXPECT_EQ(allowed_ids(m, 10), (Ids{2}));
  // A grammar whose text may go on: the end is allowed beside more text.
  OutputMatcher more(oc.compile(*gbnf(R"(root ::= "yes"+)")));
  EXPECT_EQ(allowed_ids(more, 10), (Ids{4}));
  ASSERT_TRUE(more.accept(4));
  EXPECT_FALSE(more.done());
  EXPECT_EQ(allowed_ids(more, 10), (Ids{2, 4}));
  // The special token [TOOL_CALLS] is refused in text, taken where a tool call's marker spells it.
  OutputMatcher text(oc.compile(*gbnf(R"(root ::= "[TOOL_CALLS]" | "yes")")));
  EXPECT_EQ(allowed_ids(text, 10), (Ids{4}));
  const auto call = tool_call_grammar(ToolFormat::Mistral, R"([{"type":"function","function":{"name":"f"}}])", "");
  ASSERT_NE(call, nullptr);
  OutputMatcher marker(oc.compile(*call));
  EXPECT_EQ(allowed_ids(marker, 10), (Ids{9}));
  // A grammar no token can start: 400 naming the field.
  try {
    (void)oc.compile(*gbnf(R"(root ::= "zzz")"));
    ADD_FAILURE();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "grammar");
  }
}

TEST(GrammarCompile, ByteLevelBpe) {
  TokenizerData d;
  d.tokens = {"y", "e", "s", "Ġ", "Ġyes", "{", "<|end|>"};
  d.token_types = {1, 1, 1, 1, 1, 1, 3};
  d.merges = {};
  d.pre = "smollm";
  d.eos = 6;
  const Tokenizer tok = Tokenizer::build(d);
  OutputCompiler oc(tok);
  OutputMatcher m(oc.compile(*gbnf(R"(root ::= " yes")")));
  EXPECT_EQ(allowed_ids(m, 7), (Ids{3, 4}));  // "Ġ" is the byte ' '
  ASSERT_TRUE(m.accept(4));
  EXPECT_TRUE(m.done());
}

// JSON Schema patterns (ECMA-262 regular expressions) as the grammar enforces them, against
// std::regex's ECMAScript on every string up to 5 characters over each pattern's alphabet:
// optional groups with bounded repetitions inside (xgrammar 0.2.8 took the first repetition's
// end as the group's skip; tools/xgrammar-patches/0001), alternations and nested optionals.
// Every string over `alphabet` up to `max_len` characters (UTF-8 sequences count as one).
std::vector<std::string> all_strings(const std::vector<std::string>& alphabet, int max_len) {
  std::vector<std::string> out = {""}, level = {""};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : level)
      for (const std::string& c : alphabet) next.push_back(s + c);
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

// A string's minLength/maxLength reach xgrammar as a pattern (schema_guard.cpp, length_pattern)
// and the call formats' bounded text as Regex("[^<]{m,n}") (ebnf_literal.cpp), whose masks
// xgrammar caches, instead of its counted repetition. The languages must be the ones the
// repetition gives: xgrammar's own bounded string is "\"" [^"\\\r\n]{m,n} "\"" (no escapes),
// compared here on every string up to max + 1 characters over an alphabet with the characters
// each class refuses (quote, backslash, newline, '<'), a raw control character and a two-byte one.
TEST(GrammarCompile, LengthBoundsAsPatternsKeepTheRepetitionsLanguage) {
  const std::vector<std::string> alphabet = {"a", "\xc3\xa9", "\"", "\\", "\n", "\x01", "<"};
  for (const auto& [lo, hi] : std::vector<std::pair<int, int>>{{0, 2}, {1, 3}, {2, -1}}) {
    OJson schema = {{"type", "string"}};
    if (lo) schema["minLength"] = lo;
    if (hi >= 0) schema["maxLength"] = hi;
    const std::string rep = "{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : "") + "}";
    const auto ours = json_schema_grammar(schema, "schema");
    const auto repetition = gbnf("root ::= \"\\\"\" [^\"\\\\\\r\\n]" + rep + " \"\\\"\"");
    const auto call_text = gbnf("root ::= \"(\" " + ebnf_bounded_chars(schema) + " \")\"");
    const auto call_repetition = gbnf("root ::= \"(\" [^<]" + rep + " \")\"");
    ASSERT_NE(ebnf_bounded_chars(schema).find("Regex("), std::string::npos);
    int n_ours = 0, n_call = 0;
    for (const std::string& s : all_strings(alphabet, (hi >= 0 ? hi : lo) + 1)) {
      const bool want = grammar_accepts(*repetition, "\"" + s + "\"");
      n_ours += want;
      EXPECT_EQ(grammar_accepts(*ours, "\"" + s + "\""), want) << rep << " on " << s;
      const bool want_call = grammar_accepts(*call_repetition, "(" + s + ")");
      n_call += want_call;
      EXPECT_EQ(grammar_accepts(*call_text, "(" + s + ")"), want_call) << rep << " on (" << s << ")";
    }
    EXPECT_GT(n_ours, 3) << rep;
    EXPECT_GT(n_call, 3) << rep;
  }
  // In a nullable string (a type list) the pattern holds for the string branch only.
  const auto nullable = json_schema_grammar(OJson::parse(R"({"type":["string","null"],"maxLength":2})"), "schema");
  EXPECT_TRUE(grammar_accepts(*nullable, "null"));
  EXPECT_TRUE(grammar_accepts(*nullable, "\"ab\""));
  EXPECT_FALSE(grammar_accepts(*nullable, "\"abc\""));
  // Past 128 the counted repetition stays (xgrammar counts at run time either way).
  EXPECT_EQ(ebnf_bounded_chars(OJson::parse(R"({"maxLength":129})")), "[^<]{0,129}");
  EXPECT_EQ(exact_formats(OJson::parse(R"({"type":"string","maxLength":129})")).dump(), R"({"type":"string","maxLength":129})");
  EXPECT_EQ(exact_formats(OJson::parse(R"({"type":"string","maxLength":3})")).dump(),
            R"({"type":"string","pattern":"^[^\"\\\\\\r\\n]{0,3}$"})");
  // Values are not schemas: a const or enum holding such an object is left as it is.
  const OJson c = OJson::parse(R"({"const":{"type":"string","maxLength":3}})");
  EXPECT_EQ(exact_formats(c), c);
}

TEST(GrammarCompile, PatternsAgreeWithEcmaScriptRegexOnEveryShortString) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"^5(ab{1,2})?Z$", "5abZ"},       {"^(a|b{2,3})?c$", "abc"},     {"^x([.][0-9]{1,2})?(Z|-)$", "x.1Z-"},
      {"^(ab?)?(b{1,2})?$", "ab"},      {"^(a(b(c)?)?)?d$", "abcd"}, {"^(a{0,2}b)?a$", "ab"},
  };
  for (const auto& [pattern, alphabet] : cases) {
    const auto spec = json_schema_grammar(OJson{{"type", "string"}, {"pattern", pattern}}, "schema");
    const std::regex re(pattern, std::regex::ECMAScript);
    int n_match = 0;
    std::vector<std::string> level = {""};
    for (int len = 0; len <= 5; ++len) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        const bool want = std::regex_match(s, re);
        n_match += want;
        EXPECT_EQ(grammar_accepts(*spec, "\"" + s + "\""), want) << pattern << " on \"" << s << "\"";
        for (char c : alphabet) next.push_back(s + c);
      }
      level = std::move(next);
    }
    EXPECT_GT(n_match, 1) << pattern;  // the domain holds matches, not only refusals
  }
}

// The served output that found the bug, under format "time" (an exact pattern, schema_guard.h).
TEST(GrammarCompile, TimeFormatRefusesDigitsWithoutTheFractionsDot) {
  const auto spec = json_schema_grammar(OJson{{"type", "string"}, {"format", "time"}}, "schema");
  EXPECT_FALSE(grammar_accepts(*spec, R"("20:40:5432289-21:20")"));
  EXPECT_TRUE(grammar_accepts(*spec, R"("20:40:54.32289-21:20")"));
  EXPECT_TRUE(grammar_accepts(*spec, R"("20:40:54Z")"));
  EXPECT_FALSE(grammar_accepts(*spec, R"("20:40:541Z")"));
}

}  // namespace
}  // namespace nvfp4::server
