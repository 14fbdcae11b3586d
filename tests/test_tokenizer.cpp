// The BPE tokenizer against HF `tokenizers` (fixtures/tokenizer/smollm2.json, written by
// tools/gen_smollm2_tokenizer_fixture.py) on the real SmolLM2 vocabulary, the pre-tokenizer on cases
// worked by hand, and the GGUF's chat template rendered against Jinja2's rendering of it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "model_path.h"
#include "nvfp4/chat.h"
#include "nvfp4/error.h"
#include "nvfp4/gguf.h"
#include "nvfp4/tokenizer.h"
#include "text/pretokenize.h"
#include "text/unicode.h"
#include "text/unicode_nfc.h"
#include "test_util.h"

using namespace nvfp4;

namespace {
nlohmann::json load_cases() {
  std::ifstream f(test::fixture_path("tokenizer/smollm2.json"));
  return nlohmann::json::parse(f);
}
const Tokenizer& smollm2(const std::string& path) {
  static Tokenizer tok = Tokenizer::from_gguf(gguf::File::open(path));
  return tok;
}
std::vector<std::string> pieces(std::string_view s, PreTokenizer k) {
  std::vector<std::string> out;
  for (auto [b, e] : pretokenize(s, k)) out.emplace_back(s.substr(b, e - b));
  return out;
}
using V = std::vector<std::string>;
}  // namespace

TEST(Unicode, Classes) {
  EXPECT_TRUE(unicode::is_letter('a'));
  EXPECT_TRUE(unicode::is_letter(0x4F60));   // 你
  EXPECT_TRUE(unicode::is_letter(0x01C5));   // ǅ (Lt)
  EXPECT_FALSE(unicode::is_letter('1'));
  EXPECT_TRUE(unicode::is_number(0x00B2));   // ² (No)
  EXPECT_TRUE(unicode::is_number(0x216B));   // Ⅻ (Nl)
  EXPECT_TRUE(unicode::is_number(0x0663));   // ٣ (Nd)
  EXPECT_FALSE(unicode::is_number(0x1F600));
  EXPECT_TRUE(unicode::is_whitespace(0x3000));
  EXPECT_FALSE(unicode::is_whitespace(0x200B));  // zero width space is not White_Space
}

TEST(Unicode, InvalidBytesRoundTrip) {
  const std::string s = "a\xC3(\xE2\x82\xF0\x9F\x98\x80\xFF\xED\xA0\x80z";
  const auto c = unicode::decode_utf8(s);
  std::string back;
  for (auto& ch : c) back += s.substr(ch.offset, ch.len);
  EXPECT_EQ(back, s);
  // a, C3, (, E2, 82, U+1F600, FF, ED, A0, 80 (a surrogate is invalid), z
  ASSERT_EQ(c.size(), 11u);
  EXPECT_EQ(c[5].cp, 0x1F600u);
  EXPECT_EQ(c[1].cp, unicode::kInvalid);
  EXPECT_EQ(c[7].cp, unicode::kInvalid);
}

TEST(Unicode, NfcByTheStandard) {
  EXPECT_EQ(unicode::nfc("e\xCC\x81"), "\xC3\xA9");                     // e + U+0301 -> U+00E9
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB"), "\xC3\x85");                  // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> U+AC01
  // a + U+0301 (230) + U+0323 (220): reordered to a + U+0323 + U+0301, then U+1EA1 (a with dot
  // below) + U+0301, which has no composite.
  EXPECT_EQ(unicode::nfc("a\xCC\x81\xCC\xA3"), "\xE1\xBA\xA1\xCC\x81");
  EXPECT_EQ(unicode::nfc("\xCC\x81x"), "\xCC\x81x");                     // a lone mark stays
  EXPECT_EQ(unicode::nfc("e\xFF\xCC\x81"), "e\xFF\xCC\x81");           // an invalid byte blocks
  EXPECT_EQ(unicode::nfc("plain ASCII"), "plain ASCII");
}

TEST(PreTokenize, Gpt2ByHand) {
  const auto k = PreTokenizer::gpt2;
  EXPECT_EQ(pieces("Hello world", k), (V{"Hello", " world"}));
  EXPECT_EQ(pieces("a   b", k), (V{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a\nb", k), (V{"a", "\n", "b"}));
  EXPECT_EQ(pieces("a \n b", k), (V{"a", " \n", " b"}));
  EXPECT_EQ(pieces("end  ", k), (V{"end", "  "}));
  EXPECT_EQ(pieces("it's 'll'x", k), (V{"it", "'s", " '", "ll", "'", "x"}));
  EXPECT_EQ(pieces("x=1+22;", k), (V{"x", "=", "1", "+", "22", ";"}));
  EXPECT_EQ(pieces(" !?", k), (V{" !?"}));
  EXPECT_EQ(pieces("", k), (V{}));
}

TEST(PreTokenize, DigitsFirst) {
  const auto k = PreTokenizer::digits_then_gpt2;
  EXPECT_EQ(pieces("a 123", k), (V{"a", " ", "1", "2", "3"}));
  EXPECT_EQ(pieces("x²y", k), (V{"x", "\xC2\xB2", "y"}));
  EXPECT_EQ(pieces("v2  3", k), (V{"v", "2", "  ", "3"}));
}

TEST(Tokenizer, MatchesHfTokenizersOnSmolLM2) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const Tokenizer& tok = smollm2(path);
  EXPECT_EQ(tok.n_vocab(), 49152);
  EXPECT_EQ(tok.pre(), "smollm");
  const auto j = load_cases();
  size_t n = 0, total_ids = 0;
  for (const auto& c : j["cases"]) {
    const std::string text = c["text"];
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto got = tok.encode(text);
    EXPECT_EQ(got, want) << "text: " << text;
    EXPECT_EQ(tok.decode(got), c["decoded"].get<std::string>()) << "text: " << text;
    EXPECT_EQ(tok.decode(got), text);
    ++n;
    total_ids += want.size();
  }
  EXPECT_GE(n, 40u);
  EXPECT_GE(total_ids, 600u);
}

TEST(Tokenizer, SpecialTokensAsTextWhenNotParsed) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const Tokenizer& tok = smollm2(path);
  const auto parsed = tok.encode("<|im_end|>");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0], 2);
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_TRUE(tok.is_special(0));
  EXPECT_FALSE(tok.is_special(17));
  const auto plain = tok.encode("<|im_end|>", false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok.decode(plain), "<|im_end|>");
  EXPECT_EQ(tok.decode({1, 2, 17}, true), "!");
}

TEST(Tokenizer, ChatTemplateMatchesJinja) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const Tokenizer& tok = smollm2(path);
  const ChatTemplate tmpl = ChatTemplate::parse(tok.chat_template(), path);
  const auto j = load_cases();
  ASSERT_GE(j["chats"].size(), 4u);
  for (const auto& ch : j["chats"]) {
    std::vector<ChatMessage> msgs;
    for (const auto& m : ch["messages"]) msgs.push_back({m["role"], m["content"]});
    ChatRenderOptions o;
    o.add_generation_prompt = ch["add_generation_prompt"];
    const std::string text = tmpl.render(msgs, o);
    EXPECT_EQ(text, ch["text"].get<std::string>());
    EXPECT_EQ(tok.encode(text), ch["ids"].get<std::vector<int32_t>>());
  }
}

TEST(Tokenizer, RefusesWhatItCannotServe) {
  TokenizerData d;
  d.tokens = {"a", "b", "ab"};
  d.merges = {"a b"};
  d.pre = "smollm";
  auto t = Tokenizer::build(d);
  EXPECT_EQ(t.encode("abba"), (std::vector<int32_t>{2, 1, 0}));
  TokenizerData bad_pre = d;
  bad_pre.pre = "llama-bpe-unknown";
  EXPECT_THROW(Tokenizer::build(bad_pre), Error);
  TokenizerData bad_merge = d;
  bad_merge.merges = {"a c"};
  EXPECT_THROW(Tokenizer::build(bad_merge), Error);
  TokenizerData bad_model = d;
  bad_model.model = "bert";
  EXPECT_THROW(Tokenizer::build(bad_model), Error);
  TokenizerData bad_id = d;
  bad_id.eos = 3;
  EXPECT_THROW(Tokenizer::build(bad_id), Error);
  EXPECT_THROW(ChatTemplate::parse("{% include 'x' %}", "t"), Error);
  EXPECT_THROW(ChatTemplate::parse("", "t"), Error);
}

TEST(Tokenizer, RandomBytesRoundTrip) {
  NVFP4_REQUIRE_SMOLLM2(path);
  const Tokenizer& tok = smollm2(path);
  // Bytes such as 0xC0, 0xC1, 0xF5..0xFF (never in UTF-8) have no token in this vocabulary (21):
  // they are dropped, as HF does with characters it cannot map.
  std::string missing;
  for (int b = 0; b < 256; ++b)
    if (tok.encode(std::string(1, static_cast<char>(b))).empty()) missing += static_cast<char>(b);
  EXPECT_LE(missing.size(), 32u);
  test::Rng rng(7);
  for (int k = 0; k < 200; ++k) {
    std::string s(static_cast<size_t>(rng.next() % 40), '\0');
    for (auto& ch : s) {
      // Mix ASCII, UTF-8 lead/continuation bytes and pieces of special tokens.
      const uint64_t r = rng.next();
      ch = static_cast<char>((r & 3) == 0 ? 0x80 + (r >> 8) % 0x80 : (r & 3) == 1 ? "<|im_end> \n1"[(r >> 8) % 12]
                                                                                  : 0x20 + (r >> 8) % 0x5F);
    }
    std::string kept;
    for (char ch : s)
      if (missing.find(ch) == std::string::npos) kept += ch;
    EXPECT_EQ(tok.decode(tok.encode(s)), kept);
  }
}
