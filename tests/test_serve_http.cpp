// `nvfp4 serve` on the bundled SmolLM2 (quantized to NVFP4 at load, a16q8), on 127.0.0.1: batch
// invariance (concurrent requests give the tokens each gives alone), streaming, stop strings,
// every error status, a client that hangs up, API key, full queue, SIGTERM.
#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "model_path.h"
#include "serve_util.h"

namespace nvfp4::test {
namespace {

using nlohmann::json;

std::vector<std::string> serve_args(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"serve", "-m", model, "--quantize", "--precision", "a16q8", "-t", "2",
                                "--port", "0", "--ctx", "256", "--batch", "16"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// One shared server for the tests that need no special flags.
class ServeHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string m = smollm2_path();
    if (m.empty()) return;
    server_ = new ServeProcess(serve_args(m, {"--parallel", "4", "--max-body", "65536"}));
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
ServeProcess* ServeHttp::server_ = nullptr;

struct Gen {
  bool chat = false;
  json body;
};

const char* kPrompts[] = {"The capital of France is", "Once upon a time, in a small village,",
                          "def fibonacci(n):", "The three primary colors are", "Water boils at",
                          "My favourite book is", "1, 2, 3, 4,", "The quick brown fox"};

Gen request(int i, int max_tokens) {
  Gen g;
  g.chat = i % 3 == 0;
  if (g.chat) g.body["messages"] = json::array({{{"role", "user"}, {"content", kPrompts[i % 8]}}});
  else g.body["prompt"] = kPrompts[i % 8];
  g.body["max_tokens"] = max_tokens;
  g.body["return_tokens"] = true;
  // Some constrained (their masks filled on the scheduler's helper thread during the forward).
  if (i % 4 == 1 || i % 4 == 2)
    g.body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "pair"}, {"schema", json::parse(R"({
        "type": "object", "properties": {"a": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}},
        "required": ["a", "n"], "additionalProperties": false})")}}}};
  if (i % 2 == 0) {
    g.body["temperature"] = 0;
  } else {
    g.body["temperature"] = 0.9;
    g.body["top_p"] = 0.95;
    g.body["top_k"] = 40;
    g.body["seed"] = 1000 + i;
  }
  return g;
}

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  int status = 0;
};

Result run(int port, const Gen& g, bool stream) {
  const std::string path = g.chat ? "/v1/chat/completions" : "/v1/completions";
  Result r;
  if (!stream) {
    const Reply rep = post(port, path, g.body.dump());
    r.status = rep.status;
    if (rep.status != 200) return r;
    const json& c = rep.json["choices"][0];
    r.tokens = c["tokens"].get<std::vector<int32_t>>();
    r.text = g.chat ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
    return r;
  }
  json b = g.body;
  b["stream"] = true;
  const StreamReply s = post_stream(port, path, b.dump());
  r.status = s.done ? s.status : -1;
  for (const json& e : s.events) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const json& c = e["choices"][0];
    if (c.contains("tokens"))
      for (int32_t t : c["tokens"]) r.tokens.push_back(t);
    if (g.chat && c["delta"].contains("content")) r.text += c["delta"]["content"].get<std::string>();
    if (!g.chat) r.text += c["text"].get<std::string>();
  }
  return r;
}

TEST_F(ServeHttp, ConcurrentRequestsGiveTheTokensOfEachAlone) {
  const int n = kUnderSanitizer ? 5 : 12;
  std::vector<Gen> gens;
  for (int i = 0; i < n; ++i) gens.push_back(request(i, (kUnderSanitizer ? 3 : 6) + (i * 5) % 17));
  std::vector<Result> alone;
  for (const Gen& g : gens) {
    alone.push_back(run(port_, g, false));
    ASSERT_EQ(alone.back().status, 200);
    ASSERT_FALSE(alone.back().tokens.empty());
    if (g.body.contains("response_format")) {
      EXPECT_EQ(alone.back().text.substr(0, 2), "{\"") << alone.back().text;
    }
  }
  // All at once (more than --parallel: some wait, prompts are prefilled beside running decodes),
  // half of them streamed; then again in the reverse order.
  for (int round = 0; round < (kUnderSanitizer ? 1 : 2); ++round) {
    std::vector<std::future<Result>> fut;
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      fut.push_back(std::async(std::launch::async, [&, i] { return run(port_, gens[i], i % 2 == 1); }));
    }
    for (int k = 0; k < n; ++k) {
      const int i = round == 0 ? k : n - 1 - k;
      const Result r = fut[k].get();
      ASSERT_EQ(r.status, 200) << "request " << i;
      EXPECT_EQ(r.tokens, alone[i].tokens) << "request " << i << " round " << round;
      EXPECT_EQ(r.text, alone[i].text) << "request " << i << " round " << round;
    }
  }
  const Reply m = get(port_, "/metrics");
  EXPECT_GE(metric(m.body, "nvfp4_generations_total"), n * 2);
  EXPECT_GT(metric(m.body, "nvfp4_generated_tokens_total"), 0);
  EXPECT_EQ(metric(m.body, "nvfp4_slots_total"), 4);
}

TEST_F(ServeHttp, StreamsChatAsServerSentEvents) {
  json b = {{"messages", {{{"role", "user"}, {"content", "Say hello."}}}},
            {"max_tokens", kUnderSanitizer ? 4 : 8}, {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  const StreamReply s = post_stream(port_, "/v1/chat/completions", b.dump());
  ASSERT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  ASSERT_GE(s.events.size(), 3u);
  EXPECT_EQ(s.events.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.events.front()["choices"][0]["delta"]["role"], "assistant");
  const json& usage = s.events.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_GT(usage["usage"]["prompt_tokens"].get<int>(), 0);
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 1 < s.events.size(); ++i) {
    const json& c = s.events[i]["choices"][0];
    if (c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_TRUE(finish == "length" || finish == "stop") << finish;
  b.erase("stream");
  b.erase("stream_options");
  const Reply whole = post(port_, "/v1/chat/completions", b.dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json["choices"][0]["message"]["content"], text);
  EXPECT_EQ(whole.json["usage"]["completion_tokens"], usage["usage"]["completion_tokens"]);
}

TEST_F(ServeHttp, StopStringsEndTheText) {
  json b = {{"prompt", "1, 2, 3, 4,"}, {"max_tokens", 12}, {"temperature", 0}};
  const Reply full = post(port_, "/v1/completions", b.dump());
  ASSERT_EQ(full.status, 200) << full.body;
  const std::string text = full.json["choices"][0]["text"];
  ASSERT_GE(text.size(), 6u) << text;
  const std::string stop = text.substr(3, 3);
  b["stop"] = json::array({"never-there", stop});
  for (bool stream : {false, true}) {
    std::string got, finish;
    if (!stream) {
      const Reply r = post(port_, "/v1/completions", b.dump());
      ASSERT_EQ(r.status, 200) << r.body;
      got = r.json["choices"][0]["text"];
      finish = r.json["choices"][0]["finish_reason"];
    } else {
      json sb = b;
      sb["stream"] = true;
      const StreamReply s = post_stream(port_, "/v1/completions", sb.dump());
      for (const json& e : s.events) {
        got += e["choices"][0]["text"].get<std::string>();
        if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
        EXPECT_EQ(e["choices"][0]["text"].get<std::string>().find(stop), std::string::npos);
      }
    }
    EXPECT_EQ(got, text.substr(0, text.find(stop))) << "stream " << stream;
    EXPECT_EQ(finish, "stop");
  }
}

TEST_F(ServeHttp, ErrorsHaveOpenAIsShapeAndStatus) {
  struct Case { const char* path; std::string body; int status; const char* param; };
  const std::string big(100000, 'x');
  const Case cases[] = {
      {"/v1/completions", "{not json", 400, ""},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":-1})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"hi","temperature":-1})", 400, "temperature"},
      {"/v1/completions", R"({"prompt":"hi","top_p":0})", 400, "top_p"},
      {"/v1/completions", R"({"prompt":"hi","top_p":1.5})", 400, "top_p"},
      {"/v1/completions", R"({"prompt":"hi","n":2})", 400, "n"},
      {"/v1/completions", R"({"prompt":5})", 400, "prompt"},
      {"/v1/completions", R"({"prompt":[999999]})", 400, "prompt"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":300})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":9223372036854775807})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"hi","max_tokens":18446744073709551615})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"hi","seed":1e300})", 400, "seed"},
      {"/v1/completions", R"({"prompt":[]})", 400, "prompt"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user"}],"max_tokens":"3"})", 400, "max_tokens"},
      {"/v1/chat/completions", R"({"messages":{}})", 400, "messages"},
      {"/detokenize", R"({"tokens":[99999999]})", 400, "tokens"},
      {"/v1/nothing", "{}", 404, ""},
      {"/v1/completions", "{\"prompt\":\"" + big + "\"}", 413, ""},
  };
  for (const Case& c : cases) {
    const Reply r = post(port_, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body.substr(0, 80) << ": " << r.body;
    ASSERT_TRUE(r.json.is_object() && r.json.contains("error")) << r.body;
    const json& e = r.json["error"];
    for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(e.contains(k)) << k << " in " << r.body;
    if (*c.param) {
      EXPECT_EQ(e["param"], c.param) << r.body;
    }
  }
  // The context refusal names the numbers: 256 positions, 300 asked.
  const Reply ctx = post(port_, "/v1/completions", R"({"prompt":"hi","max_tokens":300})");
  const std::string msg = ctx.json["error"]["message"];
  EXPECT_NE(msg.find("256"), std::string::npos) << msg;
  EXPECT_NE(msg.find("300"), std::string::npos) << msg;
  EXPECT_EQ(get(port_, "/nope").status, 404);
  // Unknown fields are ignored.
  EXPECT_EQ(post(port_, "/v1/completions", R"({"prompt":"hi","max_tokens":1,"presence_penalty":0,"whatever":{}})").status, 200);
}

TEST_F(ServeHttp, ModelsHealthMetricsTokenize) {
  EXPECT_EQ(get(port_, "/health").status, 200);
  const Reply models = get(port_, "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["data"][0]["object"], "model");
  EXPECT_EQ(models.json["data"][0]["id"], std::filesystem::path(smollm2_path()).filename().string());
  const Reply tok = post(port_, "/tokenize", R"({"content":"Hello world"})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  ASSERT_FALSE(tok.json["tokens"].empty());
  const Reply detok = post(port_, "/detokenize", json{{"tokens", tok.json["tokens"]}}.dump());
  ASSERT_EQ(detok.status, 200);
  EXPECT_EQ(detok.json["content"], "Hello world");
  const Reply m = get(port_, "/metrics");
  ASSERT_EQ(m.status, 200);
  for (const char* k : {"nvfp4_requests_total", "nvfp4_prompt_tokens_total", "nvfp4_generated_tokens_total",
                        "nvfp4_queue_depth", "nvfp4_slots_active", "nvfp4_generated_tokens_per_second"})
    EXPECT_GE(metric(m.body, k), 0) << k;
}

TEST_F(ServeHttp, AClientThatHangsUpFreesItsSlot) {
  const auto before = metric(get(port_, "/metrics").body, "nvfp4_generated_tokens_total");
  int seen = 0;
  const json b = {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"temperature", 0.8}, {"seed", 7},
                  {"stream", true}};
  post_stream(port_, "/v1/completions", b.dump(), [&](const json&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
  double active = 1;
  for (int i = 0; i < 1000 && active != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    active = metric(get(port_, "/metrics").body, "nvfp4_slots_active");
  }
  EXPECT_EQ(active, 0);
  const auto after = metric(get(port_, "/metrics").body, "nvfp4_generated_tokens_total");
  EXPECT_LT(after - before, 100) << "the slot kept generating after the client left";
}

}  // namespace
}  // namespace nvfp4::test
