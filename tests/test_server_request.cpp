// The server's request parsing (every refusal names its field) and its text stream (valid UTF-8,
// stop strings never split), without a model.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/request.h"
#include "server/text_stream.h"

namespace nvfp4::server {
namespace {

ApiError refusal(const std::string& body, bool chat = false) {
  try {
    parse_gen_request(body, chat);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(ServerRequest, ParsesTheFieldsClientsSend) {
  const GenRequest r = parse_gen_request(
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}],
          "max_completion_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":3,"seed":-5,"stop":["a","b"],"stream":true,
          "stream_options":{"include_usage":true},"n":1,"logprobs":false,"frequency_penalty":0,"user":"x"})",
      true);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "hi");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(int64_t{-5}));
  EXPECT_TRUE(r.seed_set);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);

  const GenRequest c = parse_gen_request(R"({"prompt":[[1,2,3]],"max_tokens":null,"stop":"x"})", false);
  EXPECT_TRUE(c.prompt_is_ids);
  EXPECT_EQ(c.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(c.max_tokens, -1);
  EXPECT_FLOAT_EQ(c.sampling.temperature, 1.0f);  // OpenAI's default
  EXPECT_FALSE(c.seed_set);
  EXPECT_EQ(parse_gen_request(R"({"prompt":["text"]})", false).prompt, "text");
  EXPECT_EQ(r.top_logprobs, -1);
  EXPECT_TRUE(r.cache_prompt);
  // logprobs: chat's boolean with top_logprobs, completions' count; cache_prompt as llama.cpp's.
  EXPECT_EQ(parse_gen_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", true).top_logprobs, 0);
  EXPECT_EQ(parse_gen_request(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":20})", true)
                .top_logprobs, 20);
  EXPECT_EQ(parse_gen_request(R"({"prompt":"x","logprobs":3,"cache_prompt":false})", false).top_logprobs, 3);
  EXPECT_FALSE(parse_gen_request(R"({"prompt":"x","logprobs":3,"cache_prompt":false})", false).cache_prompt);
  EXPECT_EQ(parse_gen_request(R"({"prompt":"x","logprobs":0})", false).top_logprobs, 0);
}

TEST(ServerRequest, RefusalsNameTheField) {
  struct Case { const char* body; bool chat; const char* param; };
  const Case cases[] = {
      {R"({"prompt":"x","max_tokens":-1})", false, "max_tokens"},
      {R"({"prompt":"x","max_tokens":0})", false, "max_tokens"},
      {R"({"prompt":"x","max_tokens":"5"})", false, "max_tokens"},
      {R"({"prompt":"x","max_tokens":2.5})", false, "max_tokens"},
      {R"({"prompt":"x","max_completion_tokens":-3})", false, "max_completion_tokens"},
      {R"({"prompt":"x","temperature":-0.1})", false, "temperature"},
      {R"({"prompt":"x","temperature":"hot"})", false, "temperature"},
      {R"({"prompt":"x","top_p":0})", false, "top_p"},
      {R"({"prompt":"x","top_p":1.01})", false, "top_p"},
      {R"({"prompt":"x","top_k":-1})", false, "top_k"},
      {R"({"prompt":"x","seed":"1"})", false, "seed"},
      {R"({"prompt":"x","n":2})", false, "n"},
      {R"({"prompt":"x","stop":["a","b","c","d","e"]})", false, "stop"},
      {R"({"prompt":"x","stop":[1]})", false, "stop"},
      {R"({"prompt":"x","stream":"yes"})", false, "stream"},
      {R"({"prompt":"x","stream_options":{"include_usage":1}})", false, "include_usage"},
      {R"({"prompt":["a","b"]})", false, "prompt"},
      {R"({"prompt":[-1]})", false, "prompt"},
      {R"({"prompt":{}})", false, "prompt"},
      {R"({})", false, "prompt"},
      {R"({"prompt":"x","model":3})", false, "model"},
      {R"({"prompt":"x","logprobs":21})", false, "logprobs"},
      {R"({"prompt":"x","logprobs":true})", false, "logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":1})", true, "logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})", true, "top_logprobs"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":-1})", true, "top_logprobs"},
      {R"({"prompt":"x","cache_prompt":1})", false, "cache_prompt"},
      {R"({})", true, "messages"},
      {R"({"messages":[]})", true, "messages"},
      {R"({"messages":"hi"})", true, "messages"},
      {R"({"messages":[{"content":"hi"}]})", true, "messages[0].role"},
      {R"({"messages":[{"role":"wizard","content":"hi"}]})", true, "messages[0].role"},
      {R"({"messages":[{"role":"user","content":5}]})", true, "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true, "messages[0].content[0].type"},
  };
  for (const Case& c : cases) {
    const ApiError e = refusal(c.body, c.chat);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << e.what();
  }
  for (const char* bad : {"", "{", "[1]", "\"x\"", "{\"prompt\":\"x\",}", "\xff"}) {
    const ApiError e = refusal(bad);
    EXPECT_EQ(e.status, 400) << bad;
  }
  const auto j = error_json(refusal(R"({"prompt":"x","top_p":2})"));
  ASSERT_TRUE(j.contains("error"));
  for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(k)) << k;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
}

TEST(ServerRequest, TokenizeBodies) {
  EXPECT_EQ(parse_tokenize_request(R"({"content":"hi","add_special":true})").content, "hi");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens":[1,2]})"), (std::vector<int32_t>{1, 2}));
  for (const char* bad : {R"({})", R"({"content":1})"}) EXPECT_THROW(parse_tokenize_request(bad), ApiError);
  for (const char* bad : {R"({})", R"({"tokens":[1.5]})", R"({"tokens":[-1]})", R"({"tokens":"1"})"})
    EXPECT_THROW(parse_detokenize_request(bad), ApiError);
}

TEST(ServerTextStream, CharactersSplitAcrossTokensWaitForTheirLastByte) {
  TextStream t({});
  const std::string euro = "\xE2\x82\xAC";  // U+20AC in three tokens
  EXPECT_EQ(t.push("a" + euro.substr(0, 1)), "a");
  EXPECT_EQ(t.push(euro.substr(1, 1)), "");
  EXPECT_EQ(t.push(euro.substr(2, 1) + "b"), euro + "b");
  // A byte that can never start or continue a character is replaced at once.
  EXPECT_EQ(t.push("\xFF"), "\xEF\xBF\xBD");
  // An unfinished character at the end becomes U+FFFD.
  EXPECT_EQ(t.push("\xF0\x9F"), "");
  EXPECT_EQ(t.finish(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sanitize("\xC0\x80 \xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x28"), 4u);  // not a prefix of a character: sent (as U+FFFD)
}

TEST(ServerTextStream, StopStringsAreNeverSplitAndEndTheText) {
  TextStream t({"END", "\xC3\xA9!"});
  std::string out;
  out += t.push("hello E");
  EXPECT_EQ(out, "hello ");  // "E" may begin "END"
  out += t.push("X");
  EXPECT_EQ(out, "hello EX");  // it did not
  out += t.push("EN");
  EXPECT_EQ(out, "hello EX");
  out += t.push("D tail");
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(out, "hello EX");
  EXPECT_EQ(t.push("more"), "");
  EXPECT_EQ(t.finish(), "");

  TextStream u({"\xC3\xA9!"});
  std::string o = u.push("caf\xC3");
  o += u.push("\xA9");
  EXPECT_EQ(o, "caf");
  o += u.push("!");
  EXPECT_TRUE(u.stopped());
  EXPECT_EQ(o, "caf");

  TextStream v({"zz"});
  std::string p = v.push("az");
  p += v.finish();  // a held-back prefix is sent at the end
  EXPECT_EQ(p, "az");
}

}  // namespace
}  // namespace nvfp4::server
