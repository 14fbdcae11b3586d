// `nvfp4 serve`'s prompt cache and logprobs on the bundled SmolLM2 (a16q8, 2 slots): requests
// sharing a system prompt, and a multi-turn chat, give with the cache the same tokens, text and
// logprobs (==) as with cache_prompt false, alone and interleaved, and report the cached tokens;
// the logprobs equal a log-softmax recomputed here from the engine's own logits.
#include <gtest/gtest.h>

#include <cmath>
#include <future>

#include "model_path.h"
#include "nvfp4/model.h"
#include "nvfp4/sampler.h"
#include "nvfp4/tokenizer.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

using nlohmann::json;

std::vector<std::string> cache_serve_args(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"serve", "-m", model, "--quantize", "--precision", "a16q8", "-t", "2",
                                "--port", "0", "--ctx", "256", "--batch", "16", "--parallel", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

class ServeCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string m = smollm2_path();
    if (m.empty()) return;
    server_ = new ServeProcess(cache_serve_args(m, {}));
    if (!server_->ready()) {
      ADD_FAILURE() << "server did not come up:\n" << server_->log();
      delete server_;
      server_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    if (server_) {
      EXPECT_EQ(server_->terminate(), 0) << server_->log();
    }
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (smollm2_path().empty()) GTEST_SKIP() << "SmolLM2 GGUF not found: set NVFP4_SMOLLM2_GGUF";
    ASSERT_NE(server_, nullptr);
    port_ = server_->port();
  }
  static ServeProcess* server_;
  int port_ = 0;
};
ServeProcess* ServeCache::server_ = nullptr;

const char* kSystem =
    "You are a helpful assistant for a small bakery. Answer in one short sentence, politely, and never "
    "mention prices unless asked. The bakery opens at seven and closes at six, every day but Monday.";
const char* kQuestions[] = {"When do you open?", "Do you sell bread?", "Are you open on Monday?",
                            "What is your name?", "Can I order a cake?", "Where are you?"};

json chat_body(int i, bool cache) {
  json b = {{"messages", {{{"role", "system"}, {"content", kSystem}}, {{"role", "user"}, {"content", kQuestions[i % 6]}}}},
            {"max_tokens", (kUnderSanitizer ? 3 : 6) + i % 4}, {"return_tokens", true}, {"logprobs", true},
            {"top_logprobs", 3}, {"cache_prompt", cache}};
  if (i % 2 == 0) {
    b["temperature"] = 0;
  } else {
    b["temperature"] = 0.8;
    b["seed"] = 40 + i;
  }
  return b;
}

struct Out {
  int status = 0;
  std::vector<int32_t> tokens;
  std::string text;
  json logprobs;
  int64_t cached = -1, prompt = -1;
};

Out chat(int port, const json& body) {
  const Reply r = post(port, "/v1/chat/completions", body.dump());
  Out o;
  o.status = r.status;
  if (r.status != 200) return o;
  const json& c = r.json["choices"][0];
  o.tokens = c["tokens"].get<std::vector<int32_t>>();
  o.text = c["message"]["content"];
  o.logprobs = c["logprobs"];
  o.cached = r.json["usage"]["prompt_tokens_details"]["cached_tokens"];
  o.prompt = r.json["usage"]["prompt_tokens"];
  return o;
}

void expect_same(const Out& a, const Out& b, const std::string& what) {
  ASSERT_EQ(a.status, 200) << what;
  ASSERT_EQ(b.status, 200) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.text, b.text) << what;
  EXPECT_EQ(a.logprobs, b.logprobs) << what;  // the doubles, as printed (17 digits: every bit)
}

TEST_F(ServeCache, ASharedSystemPromptIsReusedAndChangesNoResult) {
  const int n = kUnderSanitizer ? 3 : 6;
  std::vector<Out> ref;
  for (int i = 0; i < n; ++i) {
    ref.push_back(chat(port_, chat_body(i, false)));
    ASSERT_EQ(ref.back().status, 200);
    EXPECT_EQ(ref.back().cached, 0) << "cache_prompt false reuses nothing";
    ASSERT_EQ(ref.back().logprobs["content"].size(), ref.back().tokens.size());
  }
  // One at a time with the cache: after the first, the system prompt (and the template around it)
  // comes from a slot.
  for (int i = 0; i < n; ++i) {
    const Out o = chat(port_, chat_body(i, true));
    expect_same(o, ref[i], "alone with cache, request " + std::to_string(i));
    if (i > 0) {
      EXPECT_GT(o.cached, 30) << "request " << i;
    }
    EXPECT_LT(o.cached, o.prompt);
  }
  // Interleaved: more requests than slots, so slots change hands mid-way.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<Out>> fut;
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      fut.push_back(std::async(std::launch::async, [&, i] { return chat(port_, chat_body(i, true)); }));
    }
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      expect_same(fut[k].get(), ref[i], "interleaved round " + std::to_string(round) + " request " + std::to_string(i));
    }
  }
  EXPECT_GT(metric(get(port_, "/metrics").body, "nvfp4_prompt_tokens_cached_total"), 30 * (n - 1));
}

TEST_F(ServeCache, AMultiTurnChatReusesTheLastTurn) {
  json first = chat_body(0, true);
  first["max_tokens"] = kUnderSanitizer ? 4 : 8;
  const Out a = chat(port_, first);
  ASSERT_EQ(a.status, 200);
  json second = first;
  second["messages"].push_back({{"role", "assistant"}, {"content", a.text}});
  second["messages"].push_back({{"role", "user"}, {"content", "Thank you. And on Sunday?"}});
  const Out with = chat(port_, second);
  second["cache_prompt"] = false;
  const Out without = chat(port_, second);
  expect_same(with, without, "second turn");
  EXPECT_GE(with.cached, a.prompt) << "the first turn's prompt comes from the cache";
  EXPECT_EQ(without.cached, 0);
}

// A request that arrives while another one holding its system prompt is generating takes the
// prefix from that busy slot (copied into its own), with results == computing it again; the
// running request's result does not change either.
TEST_F(ServeCache, APrefixHeldByABusySlotIsCopied) {
  const std::string system = std::string(kSystem) + " Today the baker is called Ana.";  // cached nowhere yet
  const auto body = [&](const char* q, int max_tokens, bool cache) {
    return json{{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", q}}}},
                {"max_tokens", max_tokens}, {"temperature", 0}, {"return_tokens", true}, {"logprobs", true},
                {"cache_prompt", cache}};
  };
  const int long_n = kUnderSanitizer ? 24 : 64, short_n = kUnderSanitizer ? 3 : 6;
  const double copied0 = metric(get(port_, "/metrics").body, "nvfp4_prompt_tokens_copied_total");
  std::future<Out> second;
  json a = body("Tell me a long story about the bakery.", long_n, true);
  a["stream"] = true;
  int a_tokens = 0;
  const StreamReply sr = post_stream(port_, "/v1/chat/completions", a.dump(), [&](const json& ev) {
    // The first token's chunk (not the opening one with the role and an empty content): A's
    // prompt is in its slot by then.
    if (ev.contains("choices") && !ev["choices"].empty() && ev["choices"][0]["delta"].value("content", "") != "") {
      if (++a_tokens == 1) second = std::async(std::launch::async, [&] { return chat(port_, body("Do you sell bread?", short_n, true)); });
    }
    return true;
  });
  ASSERT_EQ(sr.status, 200);
  ASSERT_TRUE(second.valid());
  const Out b = second.get();
  const Out b_ref = chat(port_, body("Do you sell bread?", short_n, false));
  expect_same(b, b_ref, "the request that copied the prefix");
  EXPECT_GT(b.cached, 30);
  EXPECT_GT(metric(get(port_, "/metrics").body, "nvfp4_prompt_tokens_copied_total") - copied0, 30);
  // The long request's text, streamed, against it alone without the cache.
  std::string streamed;
  for (const json& ev : sr.events)
    if (ev.contains("choices") && !ev["choices"].empty() && ev["choices"][0]["delta"].contains("content"))
      streamed += ev["choices"][0]["delta"]["content"].get<std::string>();
  const Out a_ref = chat(port_, body("Tell me a long story about the bakery.", long_n, false));
  ASSERT_EQ(a_ref.status, 200);
  EXPECT_EQ(streamed, a_ref.text);
}

// The logprobs of a greedy completion against a log-softmax of the engine's logits computed here
// (long double, the other summation order), and its top tokens against a full sort.
TEST_F(ServeCache, LogprobsAreTheLogSoftmaxOfTheLogits) {
  const std::string path = smollm2_path();
  const auto ck = Checkpoint::open(path);
  LoadOptions lo;
  lo.mode = Mode::a16q8;
  lo.quantize = true;
  const auto model = Model::load(*ck, lo);
  const Tokenizer tok = Tokenizer::from_checkpoint(*ck);
  std::vector<int32_t> prompt = tok.encode("The three primary colors are", true);
  const int n_top = 5;
  const json body = {{"prompt", prompt}, {"max_tokens", kUnderSanitizer ? 3 : 6}, {"temperature", 0},
                     {"logprobs", n_top}, {"return_tokens", true}};
  for (bool stream : {false, true}) {
    std::vector<int32_t> toks;
    std::vector<double> lps;
    std::vector<json> tops;
    if (!stream) {
      const Reply r = post(port_, "/v1/completions", body.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const json& c = r.json["choices"][0];
      toks = c["tokens"].get<std::vector<int32_t>>();
      lps = c["logprobs"]["token_logprobs"].get<std::vector<double>>();
      for (const json& t : c["logprobs"]["top_logprobs"]) tops.push_back(t);
      ASSERT_EQ(c["logprobs"]["tokens"].size(), toks.size());
      EXPECT_EQ(c["logprobs"]["text_offset"][0], 0);
    } else {
      json sb = body;
      sb["stream"] = true;
      const StreamReply s = post_stream(port_, "/v1/completions", sb.dump());
      ASSERT_TRUE(s.done);
      for (const json& e : s.events) {
        const json& c = e["choices"][0];
        if (c.contains("tokens"))
          for (int32_t t : c["tokens"]) toks.push_back(t);
        if (c["logprobs"].is_null()) continue;
        for (double v : c["logprobs"]["token_logprobs"]) lps.push_back(v);
        for (const json& t : c["logprobs"]["top_logprobs"]) tops.push_back(t);
      }
    }
    ASSERT_FALSE(toks.empty());
    ASSERT_EQ(lps.size(), toks.size());
    ASSERT_EQ(tops.size(), toks.size());
    ThreadPool pool(1);
    ContextOptions co;
    co.n_ctx = 256;
    co.kv = KvType::f16;  // the cache type the server runs with (the CLI's default)
    Context ctx(*model, co, pool);
    const int64_t nv = model->config().n_vocab;
    std::vector<float> logits(static_cast<size_t>(nv));
    ctx.eval(prompt.data(), static_cast<int64_t>(prompt.size()), logits.data());
    for (size_t k = 0; k < toks.size(); ++k) {
      long double m = -INFINITY;
      for (int64_t i = nv - 1; i >= 0; --i) m = std::max<long double>(m, logits[static_cast<size_t>(i)]);
      long double sum = 0;
      for (int64_t i = nv - 1; i >= 0; --i) sum += std::exp(static_cast<long double>(logits[static_cast<size_t>(i)]) - m);
      const auto ref = [&](int32_t t) { return static_cast<double>(logits[static_cast<size_t>(t)] - m - std::log(sum)); };
      EXPECT_EQ(toks[k], argmax(logits.data(), nv)) << "greedy, token " << k;
      EXPECT_NEAR(lps[k], ref(toks[k]), 1e-9) << "token " << k;
      std::vector<int32_t> order(static_cast<size_t>(nv));
      for (int64_t i = 0; i < nv; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
      for (int r = 0; r < n_top; ++r) {
        const std::string s = tok.token_bytes(order[static_cast<size_t>(r)]);
        ASSERT_TRUE(tops[k].contains(s)) << "rank " << r << " token " << k << ": " << tops[k].dump();
        EXPECT_NEAR(tops[k][s].get<double>(), ref(order[static_cast<size_t>(r)]), 1e-9);
      }
      EXPECT_LE(tops[k].size(), static_cast<size_t>(n_top + 1));
      ctx.eval(&toks[k], 1, logits.data());
    }
  }
}

TEST(ServeCacheOff, NoCachePromptReusesNothing) {
  NVFP4_REQUIRE_SMOLLM2(model);
  ServeProcess s(cache_serve_args(model, {"--no-cache-prompt"}));
  ASSERT_TRUE(s.ready()) << s.log();
  for (int i = 0; i < 2; ++i) {
    const Out o = chat(s.port(), chat_body(0, true));
    ASSERT_EQ(o.status, 200);
    EXPECT_EQ(o.cached, 0);
  }
  EXPECT_EQ(metric(get(s.port(), "/metrics").body, "nvfp4_prompt_tokens_cached_total"), 0);
  EXPECT_NE(s.log().find("prompt cache off"), std::string::npos) << s.log();
  EXPECT_EQ(s.terminate(), 0);
}

}  // namespace
}  // namespace nvfp4::test
